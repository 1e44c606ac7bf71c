import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { envoyServices } from '../../plugins/lib/envoy-grpc/envoy-grpc.ts';

/** Handlers of a test Envoy service: return the response object, or throw a `{ code, details }` gRPC error. */
export interface EnvoyHandlers {
  Check?: (request: CheckRequestMessage) => unknown | Promise<unknown>;
  ShouldRateLimit?: (request: RateLimitRequestMessage) => unknown | Promise<unknown>;
}

/** `CheckRequest` as the test server decodes it (keepCase, enums as numbers). */
export interface CheckRequestMessage {
  attributes: {
    source: { address: { socket_address: { address: string; port_value: number } } };
    destination: { address: { socket_address: { address: string; port_value: number } } };
    request: { http: { method: string; headers: Record<string, string>; path: string; host: string; scheme: string; protocol: string; query: string; size: string } };
    context_extensions: Record<string, string>;
  };
}

export interface RateLimitRequestMessage {
  domain: string;
  descriptors: { entries: { key: string; value: string }[] }[];
  hits_addend: number;
}

/** What the server saw of one call besides the request message. */
export interface CallInfo {
  readonly method: 'Check' | 'ShouldRateLimit';
  /** Call metadata (text values; repeated keys joined with `, `). */
  readonly metadata: Record<string, string>;
  /** CN of the client certificate presented (mutual TLS), if any. */
  readonly clientCN: string | undefined;
}

export interface TestEnvoyServer {
  readonly port: number;
  readonly address: string;
  readonly checks: CheckRequestMessage[];
  readonly rateLimits: RateLimitRequestMessage[];
  /** One entry per call of either method, in order. */
  readonly calls: CallInfo[];
  stop(): Promise<void>;
}

/** TLS for the test server: PEM file paths. With `clientCa`, a client certificate signed by it is required. */
export interface TestServerTls {
  readonly cert: string;
  readonly key: string;
  readonly clientCa?: string;
}

/**
 * A real grpc-js server speaking the vendored Envoy ext_authz and RLS protos, on 127.0.0.1 (or `host`), plaintext
 * or TLS.
 */
export async function startEnvoyServer(handlers: EnvoyHandlers, options: { tls?: TestServerTls; host?: string } = {}): Promise<TestEnvoyServer> {
  const services = envoyServices();
  const checks: CheckRequestMessage[] = [];
  const rateLimits: RateLimitRequestMessage[] = [];
  const calls: CallInfo[] = [];
  const server = new grpc.Server();
  const wrap =
    <Req>(method: CallInfo['method'], record: Req[], fn: ((r: Req) => unknown) | undefined) =>
    (call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      record.push(call.request);
      const metadata: Record<string, string> = {};
      for (const [key, value] of Object.entries(call.metadata.toJSON())) metadata[key] = value.map((v) => v.toString()).join(', ');
      const auth = call.getAuthContext();
      const peer = auth.sslPeerCertificate;
      calls.push({
        method,
        metadata,
        clientCN: peer && Object.keys(peer).length ? (peer.subject?.CN as string | undefined) : undefined,
      });
      if (!fn) return cb({ code: grpc.status.UNIMPLEMENTED, details: 'not implemented' });
      Promise.resolve()
        .then(() => fn(call.request))
        .then(
          (res) => cb(null, res),
          (err: { code?: number; details?: string; message?: string }) => cb({ code: err.code ?? grpc.status.INTERNAL, details: err.details ?? err.message ?? 'error' }),
        );
    };
  server.addService(services.Authorization.service, { Check: wrap('Check', checks, handlers.Check) });
  server.addService(services.RateLimitService.service, { ShouldRateLimit: wrap('ShouldRateLimit', rateLimits, handlers.ShouldRateLimit) });
  const tls = options.tls;
  const credentials = tls
    ? grpc.ServerCredentials.createSsl(
        tls.clientCa ? readFileSync(tls.clientCa) : null,
        [{ private_key: readFileSync(tls.key), cert_chain: readFileSync(tls.cert) }],
        tls.clientCa !== undefined,
      )
    : grpc.ServerCredentials.createInsecure();
  const host = options.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) => server.bindAsync(`${host}:0`, credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return {
    port,
    address: `${host}:${port}`,
    checks,
    rateLimits,
    calls,
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Open streams from the gateway's cached channel would hold a graceful shutdown; end them.
        setTimeout(() => server.forceShutdown(), 200).unref();
      }),
  };
}

/** A throwaway PKI made with openssl: a CA, a server certificate and a client certificate signed by it, and an unrelated CA. */
export interface TestPki {
  readonly dir: string;
  readonly ca: string;
  readonly otherCa: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  remove(): void;
}

/**
 * Make a PKI in a temporary directory (PEM file paths), as test/e2e/policy-backend-tls.test.ts does: the server
 * certificate carries `DNS:localhost`, `DNS:rls.test` and `IP:127.0.0.1`; the client certificate's CN is
 * `gateway-client`.
 */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-envoy-grpc-tls-'));
  const p = (name: string): string => join(dir, name);
  const run = (...args: string[]): void => {
    execFileSync('/usr/bin/openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const caExt = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
  run('req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.pem'), '-days', '2', '-subj', '/CN=Switchyard gRPC Test CA', ...caExt);
  run('req', '-x509', ...ec, '-keyout', p('other-ca.key'), '-out', p('other-ca.pem'), '-days', '2', '-subj', '/CN=Unrelated Test CA', ...caExt);
  writeFileSync(
    p('server.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,DNS:rls.test,IP:127.0.0.1\n',
  );
  run('req', '-new', ...ec, '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', '/CN=rls.test');
  run('x509', '-req', '-in', p('server.csr'), '-CA', p('ca.pem'), '-CAkey', p('ca.key'), '-set_serial', '2', '-days', '2', '-extfile', p('server.ext'), '-out', p('server.pem'));
  writeFileSync(p('client.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n');
  run('req', '-new', ...ec, '-keyout', p('client.key'), '-out', p('client.csr'), '-subj', '/CN=gateway-client');
  run('x509', '-req', '-in', p('client.csr'), '-CA', p('ca.pem'), '-CAkey', p('ca.key'), '-set_serial', '3', '-days', '2', '-extfile', p('client.ext'), '-out', p('client.pem'));
  return {
    dir,
    ca: p('ca.pem'),
    otherCa: p('other-ca.pem'),
    serverCert: p('server.pem'),
    serverKey: p('server.key'),
    clientCert: p('client.pem'),
    clientKey: p('client.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export { grpc };
