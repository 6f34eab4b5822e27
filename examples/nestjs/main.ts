// NestJS: a LockModule that provides one LockClient per application (closed at shutdown), and an
// @Exclusive() method decorator that runs a method under a lock named from its arguments
// (docs/frameworks.md#nestjs). Two application instances (two processes in production; two Nest
// contexts here) each build the daily report three times at once: the builds never overlap.
// Parameter and method decorators need `"experimentalDecorators": true` (examples/tsconfig.json);
// injection names its token (@Inject(LockClient)), so no `emitDecoratorMetadata` is needed.
//
//   node --import tsx examples/nestjs/main.ts            # exits 1 if two builds overlapped
//   node --import tsx examples/nestjs/main.ts --no-lock  # the same without the lock: they do
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Global, Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockClient, type AcquireOptions, type LockClientOptions } from 'relock';
import { startRedis } from 'relock/testing';

const useLock = !process.argv.includes('--no-lock');

/** Closes the application's LockClient when Nest shuts down (app.close(), or a signal with enableShutdownHooks()). */
@Injectable()
class LockClientCloser implements OnApplicationShutdown {
  constructor(@Inject(LockClient) private readonly client: LockClient) {}
  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
  }
}

/** `LockModule.forRoot({ redis })`: the LockClient, injectable anywhere as `@Inject(LockClient)`. */
@Global()
@Module({})
class LockModule {
  static forRoot(options: LockClientOptions): DynamicModule {
    return {
      module: LockModule,
      providers: [{ provide: LockClient, useFactory: () => new LockClient(options) }, LockClientCloser],
      exports: [LockClient],
    };
  }
}

/**
 * Runs the method under `client.lock(name(...args))`, with `options` (a `waitMs` for a request
 * handler), through runExclusive: re-entrant, released when the method settles. The class holds
 * its LockClient as `lockClient`.
 */
function Exclusive<A extends unknown[]>(name: (...args: A) => string, options?: AcquireOptions) {
  return <R>(_target: object, _key: string | symbol, descriptor: TypedPropertyDescriptor<(...args: A) => Promise<R>>) => {
    const method = descriptor.value!;
    descriptor.value = function (this: { lockClient: LockClient }, ...args: A) {
      if (!useLock) return method.apply(this, args);
      return this.lockClient.lock(name(...args)).runExclusive(() => method.apply(this, args), options);
    };
  };
}

let building = 0;
let overlapped = 0;
let built = 0;

@Injectable()
class ReportService {
  constructor(@Inject(LockClient) readonly lockClient: LockClient) {}

  @Exclusive((day: string) => `report:${day}`, { waitMs: 30_000 })
  async build(day: string): Promise<void> {
    if (++building > 1) overlapped++;
    await sleep(30); // query, render, upload
    building--;
    built++;
    void day;
  }
}

await using redis = await startRedis();

@Module({ imports: [LockModule.forRoot({ redis: redis.url })], providers: [ReportService] })
class AppModule {}

const apps = await Promise.all([1, 2].map(() => NestFactory.createApplicationContext(AppModule, { logger: false })));
try {
  const reports = apps.map((app) => app.get(ReportService));
  await Promise.all(reports.flatMap((service) => [1, 2, 3].map(() => service.build('2026-12-07'))));
  console.log(`6 builds on 2 instances${useLock ? '' : ' (no lock)'}: ${built} built, ${overlapped} overlapped another`);
  if (overlapped > 0 || built !== 6) {
    console.log(`OVERLAPPED: ${overlapped} builds ran beside another`);
    process.exitCode = 1;
  } else {
    console.log('OK: the builds ran one at a time');
  }
} finally {
  await Promise.all(apps.map((app) => app.close())); // closes each LockClient (LockClientCloser)
}
