import { jsonErrorReply, jsonReply } from 'switchyard/sdk';
import type { BackendCompileContext, Exchange, Reply } from 'switchyard/sdk';
import { llmRequestError } from '../../lib/llm/errors.ts';

/**
 * `/v1/models` (route type `models`): the models a route serves, answered by the gateway (docs/llm.md "Models list").
 * They are the configured models (`provider.<x>.model`) of the route's `ai` backends plus the `ai` policy's
 * `modelAliases` keys (wildcard patterns left out).
 */

/**
 * The models configured on the `ai` backends of one route (model -> the provider that serves it, the first backend
 * naming it wins), shared by those backends: each registers its own during the config load, so any of them lists them
 * all, each with its own provider whichever backend answers. A named backend lists its own.
 */
export function routeModels(ctx: BackendCompileContext, model: string | undefined, provider: string): Map<string, string> {
  const at = ctx.path.lastIndexOf('backends');
  const owner = JSON.stringify(at > 0 ? ctx.path.slice(0, at) : ctx.path);
  const set = ctx.loadState('ai.routeModels', () => new Map<string, Map<string, string>>());
  let models = set.get(owner);
  if (!models) set.set(owner, (models = new Map()));
  if (model !== undefined && !models.has(model)) models.set(model, provider);
  return models;
}

/**
 * Anthropic's `/v1/models` pagination: `limit` (1 to 1000, default 20), `after_id`, `before_id`. A `limit` outside that
 * range, or not a whole number, is an error there: the message here, the caller's 400.
 */
function page(ids: readonly string[], query: string): { ids: readonly string[]; hasMore: boolean } | string {
  const params = new URLSearchParams(query);
  const asked = params.get('limit');
  const limit = asked === null ? 20 : /^[0-9]{1,4}$/.test(asked) ? Number(asked) : 0;
  if (limit < 1 || limit > 1000) return `limit: must be a whole number from 1 to 1000, not \`${asked}\``;
  const after = params.get('after_id');
  const before = params.get('before_id');
  let start = 0;
  let end = ids.length;
  if (after !== null) start = ids.indexOf(after) + 1;
  if (before !== null) {
    const b = ids.indexOf(before);
    end = b === -1 ? end : b;
    start = Math.max(start, end - limit);
  }
  const out = ids.slice(start, Math.min(end, start + limit));
  return { ids: out, hasMore: start + out.length < end };
}

/** The list in the OpenAI shape, or Anthropic's when the client sent `anthropic-version`. */
export function modelsListReply(ex: Exchange, ids: readonly string[], ownedBy: (id: string) => string, createdSeconds: number): Reply {
  if (ex.headers['anthropic-version'] !== undefined) {
    const paged = page(ids, ex.query);
    if (typeof paged === 'string') return llmRequestError(400, paged);
    const { ids: shown, hasMore } = paged;
    const createdAt = new Date(createdSeconds * 1000).toISOString();
    return jsonReply(200, {
      data: shown.map((id) => ({ type: 'model', id, display_name: id, created_at: createdAt })),
      has_more: hasMore,
      first_id: shown[0] ?? null,
      last_id: shown[shown.length - 1] ?? null,
    });
  }
  return jsonReply(200, { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: createdSeconds, owned_by: ownedBy(id) })) });
}

/**
 * One model (`GET /v1/models/{id}`, the SDKs' `models.retrieve`), in the list's item shape, or a 404 (shaped for the
 * client by the backend) when the route does not serve it. `served`: the route lists it, or lists nothing (a route
 * whose clients may name any model).
 */
export function oneModelReply(ex: Exchange, id: string, served: boolean, ownedBy: (id: string) => string, createdSeconds: number): Reply {
  if (!served) return jsonErrorReply(404, 'not_found', `model \`${id.slice(0, 256)}\` is not served on this route`);
  if (ex.headers['anthropic-version'] !== undefined) {
    return jsonReply(200, { type: 'model', id, display_name: id, created_at: new Date(createdSeconds * 1000).toISOString() });
  }
  return jsonReply(200, { id, object: 'model', created: createdSeconds, owned_by: ownedBy(id) });
}
