// Preloaded into a child (NODE_OPTIONS=--require): ioredis cannot be found, as in a project that
// installed node-redis or GLIDE alone. Both ways of loading it fail: require() and import.
const Module = require('node:module');

const missing = (request) => request === 'ioredis' || request.startsWith('ioredis/');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (missing(request)) throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' });
  return resolve.call(this, request, ...rest);
};
Module.register(
  `data:text/javascript,${encodeURIComponent(
    "export async function resolve(specifier, context, next) { if (specifier === 'ioredis' || specifier.startsWith('ioredis/')) throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' }); return next(specifier, context); }",
  )}`,
);
