// TLS for tests: whether this redis-server was built with TLS, and a throwaway CA and server
// certificate (for 127.0.0.1 and localhost) made with openssl.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Why TLS tests cannot run here, or undefined when they can. */
export function tlsUnavailable(): string | undefined {
  if (spawnSync('openssl', ['version'], { stdio: 'ignore' }).status !== 0) return 'openssl is not on the PATH';
  // A build without TLS rejects the directive itself; a build with TLS gets as far as the files.
  const probe = spawnSync('redis-server', ['--port', '0', '--tls-port', '1', '--tls-cert-file', '/nonexistent', '--tls-key-file', '/nonexistent'], {
    encoding: 'utf8',
    timeout: 5_000,
  });
  const output = `${probe.stdout ?? ''}${probe.stderr ?? ''}`;
  if (probe.error) return `redis-server could not be run: ${probe.error.message}`;
  if (/Bad directive/i.test(output)) return `this redis-server was built without TLS support (BUILD_TLS): it rejects --tls-port`;
  if (!/TLS/i.test(output)) return `could not tell whether redis-server supports TLS: ${output.trim().split('\n').pop()}`;
  return undefined;
}

export interface Certificates {
  readonly dir: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The CA certificate, PEM, for a client's `tls: { ca }`. */
  readonly ca: string;
  remove(): void;
}

function openssl(dir: string, args: readonly string[]): void {
  const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${result.stderr}`);
}

/** A CA and a server certificate signed by it, valid one day, in a fresh temporary directory. */
export function makeCertificates(): Certificates {
  const dir = mkdtempSync(join(tmpdir(), 'relock-tls-'));
  openssl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=relock test CA']);
  openssl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost']);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth\n');
  openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'server.ext']);
  const caFile = join(dir, 'ca.crt');
  return {
    dir,
    caFile,
    certFile: join(dir, 'server.crt'),
    keyFile: join(dir, 'server.key'),
    ca: readFileSync(caFile, 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
