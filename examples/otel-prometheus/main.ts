// relock's lease metrics on a Prometheus endpoint: relock/otel's RelockInstrumentation with the
// OpenTelemetry SDK's MeterProvider and the Prometheus exporter. Five app workers (five LockClients)
// share one lock: they wait for it, hold it, find it busy with tryAcquire(), and one loses its lease
// to a forceUnlock(). Then the example scrapes its own /metrics and prints relock's series.
//
//   node --import tsx examples/otel-prometheus/main.ts          # one run, prints the scrape, exits 1 if a series is missing
//   node --import tsx examples/otel-prometheus/main.ts --serve  # keeps the workload and :9464/metrics up for
//                                                               # Prometheus and grafana-dashboard.json (Ctrl-C ends it);
//                                                               # --port=N another port (0: a free one)
//
// With --serve the workload also has what a dashboard is for: every 15 s a slow hold (2.5 s: the
// others queue behind it, the watchdog renews it) and every 10 s a lost lease. render.ts charts it.
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { LockClient } from 'relock';
import { RelockInstrumentation } from 'relock/otel';
import { startRedis } from 'relock/testing';

const serve = process.argv.includes('--serve');
const port = serve ? Number(process.argv.find((arg) => arg.startsWith('--port='))?.slice('--port='.length) ?? 9464) : 0;

// The exporter is a metric reader; it serves /metrics from a server of ours (port 0 unless --serve).
const exporter = new PrometheusExporter({ preventServerStart: true });
const meterProvider = new MeterProvider({ readers: [exporter] });
metrics.setGlobalMeterProvider(meterProvider);
const instrumentation = new RelockInstrumentation();
instrumentation.setMeterProvider(meterProvider);
const http = createServer((request, response) => exporter.getMetricsRequestHandler(request, response));
await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/metrics`;

await using redis = await startRedis();
// A 3 s lease, renewed every second while held: short, so that a slow hold shows renewals.
const workers = Array.from({ length: 5 }, () => new LockClient({ redis: redis.url, leaseMs: 3_000 }));

/**
 * One round of the workload: every worker takes the lock in turn, some only try. `slow`: worker 0
 * holds it for 2.5 s; `lose`: then worker 0 loses a lease.
 */
async function round({ slow = false, lose = true } = {}): Promise<void> {
  await Promise.all(
    workers.map(async (client, i) => {
      const lock = client.lock('nightly-report');
      if (i === 4) {
        // A worker that only tries: it finds the lock busy most of the time (result "busy").
        for (let n = 0; n < 5; n++) {
          const lease = await lock.tryAcquire();
          if (lease) await lease.release();
          await sleep(15);
        }
        return;
      }
      await lock.runExclusive(() => sleep(slow && i === 0 ? 2_500 : 20 + Math.random() * 30), { waitMs: 10_000 });
    }),
  );
  if (!lose) return;
  // A lease lost: a forceUnlock() while worker 0 holds it (its lease.signal aborts at once on the
  // same client; another client's holder would learn of it at its next renewal).
  const lease = await workers[0]!.lock('nightly-report').acquire();
  await workers[0]!.lock('nightly-report').forceUnlock();
  while (!lease.signal.aborted) await sleep(5);
  await lease.release().catch(() => undefined); // ERR_LOCK_NOT_HELD: it was lost
}

try {
  if (serve) {
    console.log(`serving ${url} (Ctrl-C to stop)`);
    const started = Date.now();
    let slowAt = 5_000;
    let loseAt = 10_000;
    for (;;) {
      const elapsed = Date.now() - started;
      const slow = elapsed >= slowAt;
      const lose = elapsed >= loseAt;
      if (slow) slowAt += 15_000;
      if (lose) loseAt += 10_000;
      await round({ slow, lose });
    }
  }
  for (let n = 0; n < 3; n++) await round();
  const scrape = await (await fetch(url)).text();
  const series = scrape.split('\n').filter((line) => line.startsWith('relock_') && !line.includes('_bucket{'));
  console.log(series.join('\n'));
  const expected = [
    'relock_lock_active_leases',
    'relock_lock_pending_acquires',
    // exporter-prometheus 0.223 adds no unit suffix: the histograms are in seconds all the same.
    'relock_lock_acquire_duration_count',
    'relock_lock_lease_duration_count',
    'relock_lock_acquires_total',
    'relock_lock_lost_leases_total',
    'relock_lock_wakeups_total',
  ];
  const missing = expected.filter((name) => !series.some((line) => line.startsWith(name)));
  const busy = series.some((line) => line.startsWith('relock_lock_acquires_total') && line.includes('relock_lock_result="busy"'));
  if (missing.length > 0 || !busy) {
    console.log(`MISSING: ${[...missing, ...(busy ? [] : ['acquires with result "busy"'])].join(', ')}`);
    process.exitCode = 1;
  } else {
    console.log('OK: relock lease metrics on /metrics, in seconds, by result');
  }
} finally {
  instrumentation.disable();
  await Promise.all(workers.map((client) => client.close()));
  http.close();
  await meterProvider.shutdown();
}
