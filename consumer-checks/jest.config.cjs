// Three Jest setups users have, each loading relock from node_modules/relock (the packed tarball):
// plain CommonJS tests, ts-jest compiling TypeScript to CommonJS (the NestJS default), and ts-jest's
// ESM preset (run with --experimental-vm-modules).
module.exports = {
  projects: [
    {
      displayName: 'cjs',
      testEnvironment: 'node',
      roots: ['<rootDir>/jest-cjs'],
      testMatch: ['**/*.test.cjs'],
      moduleFileExtensions: ['cjs', 'js', 'json'],
    },
    {
      displayName: 'ts-jest',
      testEnvironment: 'node',
      roots: ['<rootDir>/jest-ts'],
      transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/jest-ts/tsconfig.json' }] },
    },
    {
      displayName: 'ts-jest-esm',
      testEnvironment: 'node',
      roots: ['<rootDir>/jest-esm'],
      extensionsToTreatAsEsm: ['.ts'],
      transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/jest-esm/tsconfig.json', useESM: true }] },
    },
  ],
};
