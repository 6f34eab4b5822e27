// relock/otel as a user gets it: the built bundles (through the package's own "exports", a
// self-reference), in NodeSDK({ instrumentations }) beside instrumentation-ioredis, in a process of
// its own, CommonJS and ESM. NodeSDK.start() enables instrumentations before it registers its
// context manager: the acquire span must still be active while relock's commands run.
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';

const root = join(import.meta.dirname, '..', '..', '..');

const program = (load: (name: string) => string) => `
  const { NodeSDK } = ${load('@opentelemetry/sdk-node')};
  const { InMemorySpanExporter, SimpleSpanProcessor } = ${load('@opentelemetry/sdk-trace-base')};
  const { InMemoryMetricExporter, PeriodicExportingMetricReader, AggregationTemporality } = ${load('@opentelemetry/sdk-metrics')};
  const { IORedisInstrumentation } = ${load('@opentelemetry/instrumentation-ioredis')};
  const { trace } = ${load('@opentelemetry/api')};
  const { RelockInstrumentation } = ${load('relock/otel')};
  const { LockClient } = ${load('relock')};
  const exporter = new InMemorySpanExporter();
  const reader = new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE), exportIntervalMillis: 3600000 });
  const processor = new SimpleSpanProcessor(exporter);
  const sdk = new NodeSDK({
    spanProcessors: [processor],
    metricReader: reader,
    instrumentations: [new IORedisInstrumentation(), new RelockInstrumentation()],
  });
  sdk.start();
  // As an application does: start() in a file of its own (node --import), locks taken later. An
  // acquire started synchronously with start() is traced but does not nest (docs/diagnostics.md).
  await new Promise((resolve) => setImmediate(resolve));
  const { Redis } = require('ioredis'); // required after start(): instrumentation-ioredis patches it
  const redis = new Redis(process.env.REDIS_URL);
  const client = new LockClient({ redis });
  await trace.getTracer('app').startActiveSpan('request', async (request) => {
    await client.lock('package-otel').runExclusive(() => undefined);
    request.end();
  });
  const { resourceMetrics } = await reader.collect();
  const acquires = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'relock.lock.acquires');
  await client.close();
  redis.disconnect();
  await processor.forceFlush(); // spans are exported once the resource's async attributes are in
  const spans = exporter.getFinishedSpans();
  const byName = (name) => spans.find((span) => span.name === name);
  const acquire = byName('relock.acquire');
  const under = spans.filter((span) => span.parentSpanContext?.spanId === acquire.spanContext().spanId).map((span) => span.instrumentationScope.name);
  console.log(JSON.stringify({
    parent: acquire.parentSpanContext?.spanId === byName('request').spanContext().spanId,
    commands: under.length > 0 && under.every((scope) => scope === '@opentelemetry/instrumentation-ioredis'),
    hold: byName('relock.hold')?.attributes['relock.lease.outcome'],
    acquired: acquires?.dataPoints[0]?.value,
    name: acquire.attributes['relock.lock.name'] ?? null,
  }));
  await sdk.shutdown();
`;

describe('relock/otel in NodeSDK, through the built package', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startRedis({ private: true });
  });
  it.after(() => server.stop());

  for (const format of ['CommonJS', 'ESM'] as const) {
    it(`nests ioredis command spans under relock.acquire with NodeSDK (${format})`, async () => {
      assert.ok(existsSync(join(root, 'dist', 'otel.cjs')), 'dist/otel.cjs is missing: npm test builds it first (npm run build)');
      const code =
        format === 'CommonJS'
          ? `(async () => { ${program((name) => `require('${name}')`)} })()`
          : `import { createRequire } from 'node:module'; const require = createRequire(process.cwd() + '/');\n${program((name) => `await import('${name}')`)}`;
      const { stdout } = await promisify(execFile)(process.execPath, format === 'CommonJS' ? ['-e', code] : ['--input-type=module', '-e', code], {
        cwd: root,
        // Nothing exported anywhere but the in-memory exporters.
        env: { ...process.env, REDIS_URL: server.url, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' },
        timeout: 30_000,
      });
      assert.equal(JSON.parse(stdout.trim().split('\n').pop()!), { parent: true, commands: true, hold: 'released', acquired: 1, name: null });
    }, 40_000);
  }
});
