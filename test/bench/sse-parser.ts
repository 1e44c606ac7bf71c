// The SDK's SSE parser against `eventsource-parser` (ADR 0030): a micro-benchmark, not a test.
//
//   node test/bench/sse-parser.ts
//
// Three streams, each fed as bytes in network-sized chunks (the parser decodes UTF-8 itself; eventsource-parser
// is given a streaming TextDecoder in front, as a caller would have to): LLM-style (many ~250-byte JSON events,
// 1,400-byte chunks), MCP-style (a few 200 KiB tool results, 16 KiB chunks), and CRLF-ended events. The A and B
// rounds interleave, so machine noise hits both; the median and the range of 7 rounds are printed.
import { createParser } from 'eventsource-parser';
import { SseParser } from '../../kernel/sdk/sse.ts';

function chunked(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

function llmStream(): string {
  let s = '';
  for (let i = 0; i < 4000; i++) {
    const delta = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { content: `token ${i} é` }, finish_reason: null }] });
    s += `data: ${delta}\n\n`;
  }
  return `${s}data: [DONE]\n\n`;
}

function mcpStream(): string {
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'x'.repeat(200 * 1024) }] } });
  let s = ': stream open\n\n';
  for (let i = 0; i < 20; i++) s += `event: message\nid: ${i}\ndata: ${big}\n\n`;
  return s;
}

function crlfStream(): string {
  let s = '';
  for (let i = 0; i < 4000; i++) s += `event: delta\r\nid: ${i}\r\ndata: {"n":${i}}\r\ndata: second line\r\n\r\n`;
  return s;
}

const LIMIT = 32 * 1024 * 1024;

function runSdk(chunks: readonly Buffer[]): number {
  let n = 0;
  const parser = new SseParser({ onEvent: () => void n++, maxEventSize: LIMIT });
  for (const c of chunks) parser.push(c);
  parser.end();
  return n;
}

function runEsp(chunks: readonly Buffer[]): number {
  let n = 0;
  const decoder = new TextDecoder();
  const parser = createParser({ onEvent: () => void n++, maxBufferSize: LIMIT });
  for (const c of chunks) parser.feed(decoder.decode(c, { stream: true }));
  parser.feed(decoder.decode());
  parser.reset({ consume: true });
  return n;
}

function measure(fn: () => number, reps: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < reps; i++) fn();
  return Number(process.hrtime.bigint() - start) / 1e6 / reps;
}

const fmt = (xs: number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[s.length >> 1]!.toFixed(3)} ms (${s[0]!.toFixed(3)}–${s[s.length - 1]!.toFixed(3)})`;
};

for (const [name, text, size, reps] of [
  ['llm: 4,001 small events, 1,400 B chunks', llmStream(), 1400, 40],
  ['mcp: 20 events of 200 KiB, 16 KiB chunks', mcpStream(), 16 * 1024, 20],
  ['crlf: 4,000 two-line events, 1,400 B chunks', crlfStream(), 1400, 40],
] as const) {
  const chunks = chunked(text, size);
  const mb = Buffer.byteLength(text) / 1024 / 1024;
  const a = runSdk(chunks);
  const b = runEsp(chunks);
  if (a !== b) throw new Error(`${name}: the parsers disagree (${a} vs ${b} events)`);
  for (let i = 0; i < 5; i++) (runSdk(chunks), runEsp(chunks)); // warm up both
  const sdk: number[] = [];
  const esp: number[] = [];
  for (let r = 0; r < 7; r++) {
    sdk.push(measure(() => runSdk(chunks), reps));
    esp.push(measure(() => runEsp(chunks), reps));
  }
  const med = (xs: number[]): number => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
  console.log(`${name} (${mb.toFixed(2)} MiB, ${a} events)`);
  console.log(`  switchyard/sdk SseParser   ${fmt(sdk)}  ${(mb / (med(sdk) / 1000)).toFixed(0)} MiB/s`);
  console.log(`  eventsource-parser 3.x     ${fmt(esp)}  ${(mb / (med(esp) / 1000)).toFixed(0)} MiB/s`);
}
