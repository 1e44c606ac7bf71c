// CPU per call of each policy's hooks on the bench's `policies` and `jwt` routes: a benchmark, not a test.
//
//   node test/bench/policy-hooks.ts            (BENCH_HOOK_ITERATIONS, default 200,000 per round, 5 rounds)
//
// Each case is a route of the bench's config compiled in-process by the real gateway (full preset), its request
// hooks then its response hooks run on a synthetic exchange (a kernel ExchangeImpl over a stand-in client request
// carrying the headers the load sends), and the queued response headers applied as the reply writer does. The
// figures are CPU time (process.cpuUsage: GC threads included), not wall time. The `exchange only` case makes the exchange and the reply and runs nothing: its time is subtracted from the others,
// so each figure is the hooks' own work. docs/perf.md, "Policy and jwt routes, session 5".
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { stringify } from 'yaml';
import { createGateway, LogSink } from 'switchyard';
import type { PolicyInstance, Reply } from 'switchyard/sdk';
import { fullPreset } from '../../plugins/presets/full.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { ExchangeImpl } from '../../kernel/runtime/exchange-impl.ts';
import type { CompiledRoute } from '../../kernel/compile/snapshot.ts';

const N = Number(process.env.BENCH_HOOK_ITERATIONS) > 0 ? Number(process.env.BENCH_HOOK_ITERATIONS) : 200_000;
const ROUNDS = 5;
/** Only the cases whose name contains this (and the subtracted one). */
const ONLY = process.env.BENCH_HOOK_CASE;
const ISSUER = 'https://issuer.bench.example';
const AUDIENCE = 'switchyard-bench';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-hooks-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const { publicKey, privateKey } = await generateKeyPair('RS256');
const jwksFile = join(dir, 'jwks.json');
writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'bench-key', alg: 'RS256', use: 'sig' }] }));
const token = await new SignJWT({ groups: ['bench', 'staff'] })
  .setProtectedHeader({ alg: 'RS256', kid: 'bench-key', typ: 'JWT' })
  .setIssuer(ISSUER)
  .setAudience(AUDIENCE)
  .setSubject('bench-user')
  .setIssuedAt()
  .setExpirationTime('1h')
  .sign(privateKey);

const limit = [{ maxTokens: 1_000_000_000, tokensPerFill: 1_000_000_000, fillInterval: '1s' }];
const cors = {
  allowOrigins: ['https://bench.example'],
  allowMethods: ['GET', 'POST'],
  allowHeaders: ['content-type', 'authorization'],
  exposeHeaders: ['x-served-by'],
  maxAge: '600s',
};
const jwtAuth = { mode: 'strict', issuer: ISSUER, audiences: [AUDIENCE], jwks: { file: jwksFile } };
const rules = { rules: [{ require: 'jwt.sub == "bench-user"' }, { require: '"bench" in jwt.groups' }] };

/** name → the route's policies and the request headers the load sends to it. */
const CASES: [string, Record<string, unknown>, Record<string, string>][] = [
  ['exchange only (subtracted)', {}, {}],
  ['requestHeaderModifier', { requestHeaderModifier: { add: { 'x-bench': 'policies' }, set: { 'x-bench-route': 'policies' }, remove: ['x-remove-me'] } }, {}],
  ['responseHeaderModifier', { responseHeaderModifier: { set: { 'x-served-by': 'switchyard' }, remove: ['x-powered-by'] } }, {}],
  ['cors (allowed Origin)', { cors }, { origin: 'https://bench.example' }],
  ['localRateLimit', { localRateLimit: limit }, {}],
  ['jwtAuth (cached verification)', { jwtAuth }, { authorization: `Bearer ${token}` }],
  ['jwtAuth + authorization (2 CEL rules)', { jwtAuth, authorization: rules }, { authorization: `Bearer ${token}` }],
  [
    'policies route (all four)',
    {
      requestHeaderModifier: { add: { 'x-bench': 'policies' }, set: { 'x-bench-route': 'policies' }, remove: ['x-remove-me'] },
      responseHeaderModifier: { set: { 'x-served-by': 'switchyard' }, remove: ['x-powered-by'] },
      cors,
      localRateLimit: limit,
    },
    { origin: 'https://bench.example' },
  ],
  ['jwt route (jwtAuth + authorization + localRateLimit)', { jwtAuth, authorization: rules, localRateLimit: limit }, { authorization: `Bearer ${token}` }],
];

const routes = CASES.map(([, policies], i) => ({ name: `r${i}`, matches: [{ path: { pathPrefix: `/r${i}` } }], policies, backends: [{ host: '127.0.0.1:9' }] }));
const text = stringify({
  config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off' },
  binds: [{ port: 8080, listeners: [{ name: 'bench', routes }] }],
});
const gateway = createGateway({ preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: join(dir, 'hooks.yaml'), text }, watch: false }, new LogSink(() => undefined));
await gateway.prepare(text);
const snapshot = await gateway.compile(text);
const compiled: CompiledRoute[] = [...snapshot.binds.values()][0]!.listeners[0]!.routes as CompiledRoute[];

/** What autocannon's requests carry, plus the case's own headers. */
const BASE_HEADERS: Record<string, string> = { host: '127.0.0.1:8080', connection: 'keep-alive', 'user-agent': 'autocannon' };
const socket = Object.assign(new EventEmitter(), { remoteAddress: '::ffff:127.0.0.1', remotePort: 51234 });

function exchange(path: string, extra: Record<string, string>): ExchangeImpl {
  const headers: Record<string, string> = { ...BASE_HEADERS, ...extra };
  const req = { method: 'GET', url: path, headers, rawHeaders: [], socket } as unknown as IncomingMessage;
  return new ExchangeImpl(req, undefined, 'http', '127.0.0.1', path, '', 0);
}

function runRoute(route: CompiledRoute, path: string, extra: Record<string, string>): void {
  const ex = exchange(path, extra);
  const reply: Reply = { status: 200, headers: { 'content-type': 'application/json', 'x-powered-by': 'upstream' }, body: null, local: false };
  const req = route.requestHooks;
  if (req) for (const h of req as PolicyInstance[]) if (h.onRequest!(ex) !== undefined) throw new Error(`${route.info.name}: a hook answered`);
  const res = route.responseHooks;
  if (res) for (const h of res as PolicyInstance[]) h.onResponse!(ex, reply);
  const queued = ex.queued;
  if (queued) for (let i = 0; i < queued.length; i += 2) reply.headers[queued[i]!] = queued[i + 1]!;
}

let baseline = 0;
for (let c = 0; c < CASES.length; c++) {
  const [name, , extra] = CASES[c]!;
  if (ONLY !== undefined && c !== 0 && !name.includes(ONLY)) continue;
  const route = compiled[c]!;
  const path = `/r${c}`;
  // The first jwt verification is asynchronous (the signature check); later ones answer from the cache.
  if (route.requestHooks) for (const h of route.requestHooks as PolicyInstance[]) await h.onRequest!(exchange(path, extra));
  for (let i = 0; i < 20_000; i++) runRoute(route, path, extra); // warm-up
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // CPU time of the process (GC threads included), not wall time: the machine is shared.
    const start = process.cpuUsage();
    for (let i = 0; i < N; i++) runRoute(route, path, extra);
    const used = process.cpuUsage(start);
    rounds.push((used.user + used.system) / N);
  }
  rounds.sort((a, b) => a - b);
  const med = rounds[ROUNDS >> 1]!;
  if (c === 0) baseline = med;
  const own = (v: number): string => (c === 0 ? v : v - baseline).toFixed(2);
  console.log(`${name.padEnd(54)} median ${own(med)} µs, min ${own(rounds[0]!)} µs  (rounds ${rounds.map((v) => v.toFixed(2)).join(' ')})`);
}
snapshot.dispose();
await gateway.stop().catch(() => undefined);
