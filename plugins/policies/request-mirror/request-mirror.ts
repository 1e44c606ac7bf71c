import type { CompileContext, HeaderMap, PolicyInstance } from 'switchyard/sdk';

export interface MirrorConfig {
  backend: Record<string, unknown>;
  percentage?: number;
}

/** Bodies up to this size are copied to the mirror; larger or unsized bodies are mirrored without a body. */
const MIRROR_BODY_LIMIT = 1024 * 1024;
const MIRROR_TIMEOUT_MS = 30_000;
const NOT_COPIED = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length']);

/** Compile one `requestMirror` policy: its backend must forward HTTP; copies are sent and their answers discarded. */
export async function compileRequestMirror(config: MirrorConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const instance = await ctx.compileBackend(config.backend, ['backend']);
  const target = instance.target;
  if (!target) return ctx.fail('`requestMirror` needs a backend that forwards HTTP (`host`, or `backend` naming one)', ['backend']);
  const share = config.percentage ?? 1;
  const log = ctx.logger;
  return {
    async onRequest(ex) {
      if (share <= 0 || (share < 1 && Math.random() >= share)) return;
      const declared = Number(ex.headers['content-length'] ?? NaN);
      let body: Buffer | undefined = ex.body;
      if (!body && declared > 0 && declared <= MIRROR_BODY_LIMIT) body = await ex.bufferBody(MIRROR_BODY_LIMIT);
      const headers: HeaderMap = {};
      for (const [name, value] of Object.entries(ex.headers)) if (value !== undefined && !NOT_COPIED.has(name)) headers[name] = value;
      target
        .request({ method: ex.method, path: ex.path + ex.query, headers, body: body ?? null, timeoutMs: MIRROR_TIMEOUT_MS })
        .then((res) => {
          res.body.on('error', () => undefined);
          res.body.resume();
        })
        .catch((err: unknown) => log.debug('mirror request failed', { target: target.origin, error: err as Error }));
    },
  };
}
