// The `ai` rows (issue 10, "Done when"; also alone with BENCH_ONLY=ai): an OpenAI-shaped client POSTing a 220-byte
// chat completion to a Switchyard route whose backend is `ai` with the `openAI` provider and `hostOverride` to a
// fixed-answer upstream, non-streamed (a 320-byte completion) and streamed (`"stream": true`: eight SSE chunks, a
// usage chunk and `[DONE]`). Beside it the bare undici proxy (bare-proxy.ts) with the same requests and answers: the
// figure is the gateway's CPU per request and its ratio to the bare proxy's, per mode.
//
// BENCH_AI_BASELINE: a directory holding another checkout (bin/switchyard.js), whose gateway is measured as more rows
// in the same interleaved rounds (A/B in one run). BENCH_AI_NODE_ARGS: node flags for this checkout's gateway (e.g.
// `--cpu-prof --cpu-prof-dir=/tmp/prof`). BENCH_AI_MODES=non-streaming (or streaming): one mode only. A third
// target, the gateway's plain `host` route to the same upstream (non-streamed only), shows what the kernel costs.
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../helpers/ports.ts';
import { CHAT_REQUEST, CHAT_STREAM_REQUEST, SMALL_ANSWER, STREAM_ANSWER } from './llm-bodies.ts';
import type { BenchKit } from './peers.ts';
import { postRounds } from './post-rounds.ts';
import type { PostRow } from './post-rounds.ts';
import type { Child } from './run.ts';

type Mode = 'non-streaming' | 'streaming';
const MODES: readonly Mode[] = (['non-streaming', 'streaming'] as const).filter((m) => !process.env.BENCH_AI_MODES || process.env.BENCH_AI_MODES.split(',').includes(m));
/** The plain `host` route of the same gateway (the kernel's share): a prefix the `ai` route does not take. */
const HOST_PREFIX = '/host';
const PATH = '/v1/chat/completions';
const HEADERS = { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };

/** A row of the interleaved POST rounds (post-rounds.ts) with what this bench adds. */
interface AiRow extends PostRow {
  readonly bare: boolean;
  readonly mode: Mode;
  readonly body: string;
  readonly answer: string;
}

/** One `ai` route for every path: `openAI` with the client's model, `hostOverride` to the fixed-answer upstream. */
async function aiConfig(file: string, upstreamPort: number): Promise<{ port: number; readiness: number }> {
  const [port, admin, stats, readiness] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const host = { name: 'host', matches: [{ path: { pathPrefix: HOST_PREFIX } }], backends: [{ host: `127.0.0.1:${upstreamPort}` }] };
  const route = {
    name: 'ai',
    matches: [{ path: { pathPrefix: '/' } }],
    backends: [{ ai: { name: 'bench', provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstreamPort}` } }],
  };
  writeFileSync(
    file,
    stringify({
      config: { adminAddr: `127.0.0.1:${admin}`, statsAddr: `127.0.0.1:${stats}`, readinessAddr: `127.0.0.1:${readiness}` },
      binds: [{ port, listeners: [{ name: 'bench', routes: [host, route] }] }],
    }),
  );
  return { port, readiness };
}

/** Gateway rows: one per mode. */
async function startGateway(kit: BenchKit, dir: string, name: string, cli: string, upstreamPort: number, nodeArgs: string[]): Promise<{ child: Child; base: string }> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'ai.yaml');
  const cfg = await aiConfig(file, upstreamPort);
  // The access log (on by default) goes to a file, as a deployment's would.
  const fd = openSync(join(dir, 'access.log'), 'w');
  const child = kit.startPinned(name, kit.cpuTarget, kit.node, [...nodeArgs, cli, '-f', file], fd);
  closeSync(fd);
  await kit.waitFor200(`http://127.0.0.1:${cfg.readiness}/healthz/ready`, child, performance.now());
  return { child, base: `http://127.0.0.1:${cfg.port}` };
}

function rows(name: string, bare: boolean, base: string, child: Child, kit: BenchKit, modes = MODES, prefix = ''): AiRow[] {
  const pids = kit.processTree(child.proc.pid!);
  return modes.map((mode) => ({
    name,
    bare,
    mode,
    url: base + prefix + PATH,
    body: mode === 'streaming' ? CHAT_STREAM_REQUEST : CHAT_REQUEST,
    answer: mode === 'streaming' ? STREAM_ANSWER : SMALL_ANSWER,
    pids,
    cpu: [],
    rps: [],
    p50: [],
    bad: 0,
    errors: 0,
  }));
}

/** The `ai` rows: prints a table and returns the gateway's non-streamed CPU ratio to the bare proxy. */
export async function aiScenario(kit: BenchKit, notes: string[]): Promise<number> {
  const { fmt, median } = kit;
  const dir = join(kit.work, 'ai');
  mkdirSync(dir, { recursive: true });

  const upstreamPort = await freePort();
  const upstream = kit.startPinned('ai upstream', kit.cpuRest, kit.node, [join(kit.here, 'upstream.ts'), String(upstreamPort)]);
  await kit.listening(upstream);

  const barePort = await freePort();
  const bare = kit.startPinned('bare proxy (ai)', kit.cpuTarget, kit.node, [join(kit.here, 'bare-proxy.ts'), String(barePort), String(upstreamPort)]);
  await kit.listening(bare);

  const nodeArgs = (process.env.BENCH_AI_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const gw = await startGateway(kit, join(dir, 'this'), 'switchyard (ai)', kit.cli, upstreamPort, nodeArgs);
  const all: AiRow[] = [...rows('bare undici proxy', true, `http://127.0.0.1:${barePort}`, bare, kit), ...rows('switchyard ai route', false, gw.base, gw.child, kit)];
  // The upstream answers `/host/v1/chat/completions` like `/v1/chat/completions`.
  if (MODES.includes('non-streaming')) all.push(...rows('switchyard host route', false, gw.base, gw.child, kit, ['non-streaming'], HOST_PREFIX));
  const children = [upstream, bare, gw.child];
  const baseline = process.env.BENCH_AI_BASELINE;
  if (baseline) {
    const b = await startGateway(kit, join(dir, 'baseline'), 'switchyard (ai, baseline)', join(baseline, 'bin/switchyard.js'), upstreamPort, []);
    all.push(...rows(`switchyard ai route (${baseline})`, false, b.base, b.child, kit));
    if (MODES.includes('non-streaming')) all.push(...rows(`switchyard host route (${baseline})`, false, b.base, b.child, kit, ['non-streaming'], HOST_PREFIX));
    children.push(b.child);
  }

  // Sanity: every row answers 200 with the whole answer (the gateway's stream is the upstream's, byte for byte).
  for (const r of all) {
    const res = await kit.post(r.url, r.body, HEADERS);
    if (res.status !== 200 || res.body.length !== r.answer.length) {
      throw new Error(`${r.name} (${r.mode}) answered ${res.status} with ${res.body.length} bytes (want 200 with ${r.answer.length}): ${res.body.slice(0, 300)}`);
    }
  }

  await postRounds(kit, all, (r) => ({ headers: HEADERS, body: r.body }), (r) => `${r.name} (${r.mode})`);
  for (const c of children) await kit.stop(c);

  const bareOf = (mode: Mode): AiRow => all.find((r) => r.bare && r.mode === mode)!;
  console.log(`\nai: POST ${PATH} (${CHAT_REQUEST.length} B body; streamed: ${CHAT_STREAM_REQUEST.length} B), answers ${SMALL_ANSWER.length} B JSON / ${STREAM_ANSWER.length} B SSE`);
  // Each round's ratio to the bare proxy's round: on a busy machine the CPU per request of every target drifts together.
  const perRound = (r: AiRow): number[] => r.cpu.map((v, i) => v / bareOf(r.mode).cpu[i]!);
  console.log(`\n| target | mode | req/s (c=${kit.connections}) | CPU µs/req (rounds) | CPU ÷ bare | ÷ bare per round (median) | p50 ms (c=1) |`);
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const r of all) {
    const ratio = median(r.cpu) / median(bareOf(r.mode).cpu);
    const rounds = perRound(r);
    console.log(
      `| ${r.name} | ${r.mode} | ${fmt(median(r.rps), 0)} | ${fmt(median(r.cpu), 1)} (${r.cpu.map((v) => fmt(v, 0)).join(', ')}) | ${r.bare ? '—' : `${fmt(ratio)}×`} | ` +
        `${r.bare ? '—' : `${rounds.map((v) => fmt(v)).join(', ')} (${fmt(median(rounds))}×)`} | ${fmt(median(r.p50), 3)} |`,
    );
  }
  for (const r of all.filter((x) => x.bad > 0 || x.errors > 0)) notes.push(`${r.name} (${r.mode}): ${r.bad} non-2xx and ${r.errors} errors/timeouts during the measurement`);
  const gwRow = all.find((r) => !r.bare && r.mode === 'non-streaming'); // this checkout's (the baseline's come after)
  if (!gwRow) return NaN;
  const ratio = median(gwRow.cpu) / median(bareOf('non-streaming').cpu);
  console.log(`\n| target check | verdict | measured |\n|---|---|---|\n| ai non-streaming CPU per request ≤ 1.4× the bare proxy's | ${ratio <= 1.4 ? 'PASS' : 'MISS'} | ${fmt(ratio)}× |`);
  return ratio;
}
