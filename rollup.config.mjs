// ESM and CommonJS bundles, each with its own declaration file. JavaScript goes through esbuild (no
// type checking: `npm run typecheck` does that); declarations through rollup-plugin-dts, which calls
// the TypeScript compiler API (TypeScript 5.9: see docs/design.md).
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dts } from 'rollup-plugin-dts';
import esbuild from 'rollup-plugin-esbuild';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const external = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)].map((name) => new RegExp(`^${name}(/|$)`));
const isExternal = (id) => id.startsWith('node:') || builtinModules.includes(id) || external.some((pattern) => pattern.test(id));

export default [
  {
    input: 'src/index.ts',
    external: isExternal,
    plugins: [esbuild({ target: 'node20', tsconfig: 'tsconfig.json' })],
    output: [
      { file: 'dist/index.mjs', format: 'es' },
      // interop 'auto': require() of an ESM-only dependency (p-timeout) gives its namespace object.
      { file: 'dist/index.cjs', format: 'cjs', exports: 'named', interop: 'auto' },
    ],
  },
  {
    input: 'src/index.ts',
    external: isExternal,
    plugins: [dts({ tsconfig: 'tsconfig.json' })],
    output: [
      { file: 'dist/index.d.mts', format: 'es' },
      { file: 'dist/index.d.cts', format: 'es' },
    ],
  },
  // relock/testing (src/testing/): its own bundles, sharing no chunk with the main entry.
  {
    input: 'src/testing/index.ts',
    external: isExternal,
    plugins: [esbuild({ target: 'node20', tsconfig: 'tsconfig.json' })],
    output: [
      { file: 'dist/testing.mjs', format: 'es' },
      { file: 'dist/testing.cjs', format: 'cjs', exports: 'named', interop: 'auto' },
    ],
  },
  {
    input: 'src/testing/index.ts',
    external: isExternal,
    plugins: [dts({ tsconfig: 'tsconfig.json' })],
    output: [
      { file: 'dist/testing.d.mts', format: 'es' },
      { file: 'dist/testing.d.cts', format: 'es' },
    ],
  },
  // relock/otel (src/otel/): its own bundles; @opentelemetry/api is a peer dependency, left external.
  {
    input: 'src/otel/index.ts',
    external: isExternal,
    plugins: [esbuild({ target: 'node20', tsconfig: 'tsconfig.json' })],
    output: [
      { file: 'dist/otel.mjs', format: 'es' },
      { file: 'dist/otel.cjs', format: 'cjs', exports: 'named', interop: 'auto' },
    ],
  },
  {
    input: 'src/otel/index.ts',
    external: isExternal,
    plugins: [dts({ tsconfig: 'tsconfig.json' })],
    output: [
      { file: 'dist/otel.d.mts', format: 'es' },
      { file: 'dist/otel.d.cts', format: 'es' },
    ],
  },
  // The `relock` command (package.json "bin"): one ES module with a shebang, carrying its own copy
  // of the library (no chunk shared with dist/index.mjs).
  {
    input: 'src/cli/main.ts',
    external: isExternal,
    plugins: [esbuild({ target: 'node20', tsconfig: 'tsconfig.json' })],
    // With a source map: its tests run the built command, and c8 maps their coverage back to src/cli/.
    output: { file: 'dist/cli.mjs', format: 'es', banner: '#!/usr/bin/env node', sourcemap: true },
  },
];
