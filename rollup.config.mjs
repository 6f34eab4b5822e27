// ESM and CommonJS bundles, each with its own declaration file. JavaScript goes through esbuild (no
// type checking: `npm run typecheck` does that); declarations through rollup-plugin-dts, which calls
// the TypeScript compiler API (TypeScript 5.9: see docs/design.md).
//
// - The `relock` command (dist/cli.mjs) is built with the ESM library in one build: both entries
//   import their shared code from dist/chunks/ (the command carries no copy of the library).
// - The CommonJS bundles carry the ESM-only dependencies (p-timeout) in them: a `require()` of an
//   ES module needs Node's require(esm), which Jest and older loaders lack. The ESM bundles import
//   them as dependencies.
// - Source maps only with `--environment SOURCEMAP` (npm test: c8 maps the command's coverage back to
//   src/); the package ships none.
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dts } from 'rollup-plugin-dts';
import esbuild from 'rollup-plugin-esbuild';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const sourcemap = process.env.SOURCEMAP === 'true';
const packageJson = (name) => JSON.parse(readFileSync(fileURLToPath(new URL(`./node_modules/${name}/package.json`, import.meta.url)), 'utf8'));

/** Dependencies published as ES modules only ("type": "module", no "require" condition). */
const esmOnly = Object.keys(pkg.dependencies).filter((name) => {
  const dep = packageJson(name);
  return dep.type === 'module' && !JSON.stringify(dep.exports ?? {}).includes('"require"');
});

const external = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)].map((name) => new RegExp(`^${name}(/|$)`));
const isExternal = (id) => id.startsWith('node:') || builtinModules.includes(id) || external.some((pattern) => pattern.test(id));
const isExternalToCjs = (id) => !esmOnly.some((name) => id === name || id.startsWith(`${name}/`)) && isExternal(id);

/** Resolves the ESM-only dependencies (their "import" entry) so that the CommonJS bundles carry them. */
const bundleEsmOnly = {
  name: 'bundle-esm-only',
  resolveId(id) {
    return esmOnly.includes(id) ? fileURLToPath(import.meta.resolve(id)) : null;
  },
};
const licenses = esmOnly
  .map((name) => {
    const dep = packageJson(name);
    return ` * ${name} ${dep.version} (${dep.license}), by ${dep.author?.name ?? dep.author}: https://github.com/${dep.repository}`;
  })
  .join('\n');
const cjsBanner = esmOnly.length ? `/*!\n * relock's CommonJS bundle carries these ES-module-only dependencies:\n${licenses}\n */` : '';

/**
 * ioredis is an optional peer: the declarations import its `RedisOptions` under `@ts-ignore`, so a
 * project without ioredis compiles them (`skipLibCheck: false` too), and one with ioredis gets its
 * options checked.
 */
const optionalIoredisTypes = {
  name: 'optional-ioredis-types',
  renderChunk(code) {
    const line = /^import \{[^}]*\} from 'ioredis';$/m;
    if (!line.test(code)) return null;
    return code.replace(line, (text) => `// @ts-ignore -- ioredis is an optional peer: without it, its options are not checked.\n${text}`);
  },
};

const transpile = () => esbuild({ target: 'node20', tsconfig: 'tsconfig.json' });
const declarations = () => [dts({ tsconfig: 'tsconfig.json' }), optionalIoredisTypes];

export default [
  // The ESM library and the `relock` command (package.json "bin"), sharing dist/chunks/.
  {
    input: { index: 'src/index.ts', cli: 'src/cli/main.ts' },
    external: isExternal,
    plugins: [transpile()],
    output: {
      dir: 'dist',
      format: 'es',
      entryFileNames: '[name].mjs',
      chunkFileNames: 'chunks/[name].mjs',
      banner: (chunk) => (chunk.isEntry && chunk.name === 'cli' ? '#!/usr/bin/env node' : ''),
      sourcemap,
    },
  },
  {
    input: 'src/index.ts',
    external: isExternalToCjs,
    plugins: [bundleEsmOnly, transpile()],
    output: { file: 'dist/index.cjs', format: 'cjs', exports: 'named', banner: cjsBanner },
  },
  {
    input: 'src/index.ts',
    external: isExternal,
    plugins: declarations(),
    output: [
      { file: 'dist/index.d.mts', format: 'es' },
      { file: 'dist/index.d.cts', format: 'es' },
    ],
  },
  // relock/testing (src/testing/): its own bundles, sharing no chunk with the main entry.
  {
    input: 'src/testing/index.ts',
    external: isExternal,
    plugins: [transpile()],
    output: { file: 'dist/testing.mjs', format: 'es' },
  },
  {
    input: 'src/testing/index.ts',
    external: isExternalToCjs,
    plugins: [bundleEsmOnly, transpile()],
    output: { file: 'dist/testing.cjs', format: 'cjs', exports: 'named' },
  },
  {
    input: 'src/testing/index.ts',
    external: isExternal,
    plugins: declarations(),
    output: [
      { file: 'dist/testing.d.mts', format: 'es' },
      { file: 'dist/testing.d.cts', format: 'es' },
    ],
  },
  // relock/otel (src/otel/; @opentelemetry/api is a peer dependency, left external) and relock/node-cron
  // (src/node-cron/; it imports nothing of node-cron, nor of relock but types: it calls the LockClient
  // it is given): their own bundles.
  ...['otel', 'node-cron'].flatMap((name) => [
    {
      input: `src/${name}/index.ts`,
      external: isExternal,
      plugins: [transpile()],
      output: [
        { file: `dist/${name}.mjs`, format: 'es' },
        { file: `dist/${name}.cjs`, format: 'cjs', exports: 'named', interop: 'auto' },
      ],
    },
    {
      input: `src/${name}/index.ts`,
      external: isExternal,
      plugins: [dts({ tsconfig: 'tsconfig.json' })],
      output: [
        { file: `dist/${name}.d.mts`, format: 'es' },
        { file: `dist/${name}.d.cts`, format: 'es' },
      ],
    },
  ]),
];
