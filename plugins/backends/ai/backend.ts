import { declineReply, GatewayError, llmTokenLimiters } from 'switchyard/sdk';
import type { BackendCompileContext, BackendInstance, Exchange, ForwardOptions, LlmCallQuote, Reply, UpstreamAttempt } from 'switchyard/sdk';
import { backendAuthFailure } from '../../lib/backend-auth/contract.ts';
import type { BackendAuthInstance } from '../../lib/backend-auth/contract.ts';
import { backendAuthSlot } from '../../lib/slots/backend-auth.ts';
import { llmProviderSlot } from '../../lib/slots/ai.ts';
import { providerProblem } from './provider-check.ts';
import { applyAnthropicCacheMarkers } from '../../lib/llm-guard/prompt-caching.ts';
import { AI_BACKEND_MODELS, AI_POLICY, LLM_CLIENT_FORMAT, LLM_VIRTUAL_MODEL } from '../../lib/llm/contract.ts';
import type { AiBackendModels, AiPolicyRuntime, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { BadEncodingError, decodeBody, DecodedTooLargeError, UnsupportedEncodingError } from '../../lib/llm/body.ts';
import { llmRequestError, shapeClientError } from '../../lib/llm/errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../lib/json-depth/json-depth.ts';
import { estimatePromptTokens, maxOutputTokens } from '../../lib/llm/estimate.ts';
import { parseGeminiPath } from '../../lib/llm/gemini/paths.ts';
import { asksForSse } from '../../lib/llm/gemini/json-array.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import { LlmCall } from '../../lib/llm/telemetry.ts';
import { llmMetrics } from '../../lib/llm/llm-metrics.ts';
import { formatOf, translationBetween } from '../../lib/llm/formats/index.ts';
import { requestFields } from '../../lib/llm/request-fields.ts';
import { requestAttributeMembers } from '../../lib/llm/request-attributes.ts';
import { droppedFields, unhonouredFields, unhonouredMessage } from '../../lib/llm/unhonoured.ts';
import { GOOGLE_QUERY_KEY, PROVIDER_KEY_HEADERS, queryKeyToHeader } from '../../lib/llm/provider-kit.ts';
import { SETS_COOKIE } from '../../lib/header-modifier/header-modifier.ts';
import { answerReply, RESPONSE_LIMIT } from './answer.ts';
import type { LlmRequest } from './answer.ts';
import { compileCosts } from './costs.ts';
import type { AiCostsConfig } from './costs.ts';
import { detectFormat } from './detect.ts';
import { modelsListReply, oneModelReply, routeModels } from './models-list.ts';
import { parseHostOverride } from './host-override.ts';
import { MAX_MODEL_NAME, passthroughHeaders, providerHeaders, REQUEST_LIMIT, reserveTokens, splitPath, withUsageOption } from './request-parts.ts';
import { passthroughHandler } from './passthrough.ts';
import { meteredUpgrade, unmeterable } from './realtime-meter.ts';
import { meteredRealtime } from './realtime-dialects.ts';
import { claimAiBackendName } from './unique-name.ts';
import { llmDeadlineSection } from './deadline.ts';

export interface AiBackendConfig {
  name: string;
  provider: Record<string, unknown>;
  hostOverride?: string;
  pathOverride?: string;
  costs?: AiCostsConfig;
  dropUnsupportedParams?: boolean;
}

/** A non-streamed call's answer is read whole by the target (ADR 0058), no stream in between. */
const READ_WHOLE: ForwardOptions = { readWhole: RESPONSE_LIMIT };
/** A streamed call's answer keeps the upstream's raw header list: no header object unless a header is edited. */
const STREAM_RAW: ForwardOptions = { rawHeaders: true };

/** What moves a request to the route's next `ai` backend: rate limited, the provider failing or overloaded (529; ADR 0039). */
const FAILOVER = { codes: [429, 500, 502, 503, 504, 529] } as const;

const STREAMING_FORMATS: ReadonlySet<LlmRouteType> = new Set(['completions', 'messages', 'responses']);

export async function compileAiBackend(config: AiBackendConfig, ctx: BackendCompileContext): Promise<BackendInstance> {
  claimAiBackendName(ctx, config.name);
  const spans = ctx.spans;
  const { key, instance: provider } = await ctx.compileVariant(llmProviderSlot, config.provider, ['provider']);
  const unusable = providerProblem(provider);
  if (unusable !== undefined) ctx.fail(`LLM provider \`${key}\` returned ${unusable}`, ['provider', key]);
  const metrics = llmMetrics(ctx, provider.model);
  // The `ai` policy's compiled runtime (route or backend level), handed over at compile time.
  const policy = ctx.policies.facet(AI_POLICY);
  const facetTls = ctx.policies.facets.tls;
  let origin = provider.origin;
  let tls = origin.startsWith('https:') ? (facetTls ?? provider.tls) : undefined;
  if (config.hostOverride !== undefined) {
    const parsed = parseHostOverride(config.hostOverride, facetTls !== undefined);
    if (typeof parsed === 'string') ctx.fail(parsed, ['hostOverride']);
    origin = parsed.origin;
    tls = parsed.secure ? facetTls : undefined;
  }
  // Providers are reached by name: the Host header is the provider's, never the client's.
  const upstream = ctx.http.target({ origin, tls, authority: 'target' });

  // The provider's own credential (bedrock: SigV4, vertex: a Google token) unless a backendAuth policy applies.
  let signer: BackendAuthInstance | undefined;
  if (provider.defaultAuth && !ctx.policies.has('backendAuth')) {
    ({ instance: signer } = await ctx.compileVariant(backendAuthSlot, structuredClone(provider.defaultAuth), ['provider', key]));
  }
  // The client's cookies stay with the gateway unless a requestHeaderModifier of the route or backend sets `Cookie` (ADR 0195).
  const withholdCookie = ctx.policies.facet(SETS_COOKIE) === undefined;
  const pathOverride = config.pathOverride !== undefined ? splitPath(config.pathOverride) : undefined;
  const log = ctx.logger.child({ backend: config.name });
  const models = routeModels(ctx, provider.model, provider.kind);
  const priceOf = await compileCosts(config.costs, provider.kind, ctx);
  const loadedAt = Math.floor(Date.now() / 1000);

  /** `/v1/models`: the route's configured models (each owned by its provider), then the policy's alias names. */
  // Alias names are owned by the route's first configured model's provider, so the answer is the same whichever backend answers.
  const ownedBy = (id: string): string => models.get(id) ?? models.values().next().value ?? provider.kind;
  // Virtual model names (`ai.virtualModels`) are the gateway's own: owned by `switchyard`.
  const virtualNames = new Set(policy?.virtualModelNames ?? []);
  const listOwner = (id: string): string => (virtualNames.has(id) && !models.has(id) ? 'switchyard' : ownedBy(id));
  const listModels = (ex: Exchange, policy: AiPolicyRuntime | undefined): Reply => {
    const ids = new Set(models.keys());
    for (const name of policy?.modelAliasNames ?? []) ids.add(name);
    for (const name of virtualNames) ids.add(name);
    const asked = policy?.modelAsked?.(ex.path);
    if (asked !== undefined) return oneModelReply(ex, asked, ids.size === 0 || ids.has(asked), listOwner, loadedAt);
    return modelsListReply(ex, [...ids], listOwner, loadedAt);
  };

  /**
   * Per attempt, after the backendAuth policy: provider key conventions on what it set, then the default signer.
   * Without either there is nothing to do per attempt (the conventions were applied before forwarding).
   */
  const attemptHook = signer !== undefined || ctx.policies.has('backendAuth');
  type AttemptHook = (attempt: UpstreamAttempt) => void | Promise<void>;
  const onAttempt = (ex: Exchange, format?: LlmWireFormat): AttemptHook | undefined => (attemptHook ? (attempt) => perAttempt(ex, attempt, format) : undefined);
  const perAttempt = (ex: Exchange, attempt: UpstreamAttempt, format?: LlmWireFormat): void | Promise<void> => {
    provider.prepareHeaders(attempt.headers, format);
    if (!signer) return;
    // The provider's default credential is the request's only one: a client's key never goes beside it.
    for (const name of PROVIDER_KEY_HEADERS) delete attempt.headers[name];
    try {
      const r = signer.apply(ex, attempt);
      if (r) return r.catch((err: unknown) => Promise.reject(backendAuthFailure(err)));
    } catch (err) {
      throw backendAuthFailure(err);
    }
  };

  const realtime = { provider, upstream, metrics, priceOf, log };
  const passthrough = passthroughHandler({ provider, spans, withholdCookie, upstream, metrics, priceOf, signerNeedsBody: signer?.needsBody === true, onAttempt, log });

  /**
   * A chat request as a chain of callbacks (body read -> dispatch -> answer), no async function: the usual call (no
   * policy, no token limit) makes one promise of its own until the upstream is called (docs/adr/0070).
   */
  const handle = (ex: Exchange): Reply | Promise<Reply> => {
    const route = policy?.routeType(ex.path) ?? 'completions';
    if (route === 'models') return listModels(ex, policy);
    if (route === 'passthrough' || route === 'realtime') return passthrough(ex, route);
    // Known before the body is read, so even a body that does not parse is answered in the client's error shape.
    if (route !== 'detect') ex.set(LLM_CLIENT_FORMAT, route);
    return new Promise<Reply>((resolve, reject) => {
      ex.readBodyInto(REQUEST_LIMIT, {
        bodyRead: (raw) => {
          try {
            const encoding = ex.headers['content-encoding'];
            const out = encoding === undefined ? withBody(ex, route, raw) : decodeBody(raw, encoding, REQUEST_LIMIT).then((decoded) => withBody(ex, route, decoded), bodyFailed);
            if (out instanceof Promise) out.then(resolve, reject);
            else resolve(out);
          } catch (err) {
            reject(err);
          }
        },
        bodyFailed: (err) => {
          try {
            resolve(bodyFailed(err));
          } catch (thrown) {
            reject(thrown);
          }
        },
      });
    });
  };

  /**
   * Whether a request may be dispatched from its picked fields (`requestFields`, ADR 0070): nothing before dispatch
   * reads the whole body (no `ai` policy, a client format known from the path). Message content on spans is asked per
   * request: tracing starts after the first load, so `ctx.spans` says nothing of it at compile time.
   */
  const mayPickFields = policy === undefined;

  /** The request body parsed and checked; the policy's request stage when there is one. */
  const withBody = (ex: Exchange, route: LlmRouteType | 'detect', raw: Buffer): Reply | Promise<Reply> => {
    // A route with token limits parses the body for the prompt estimate anyway: one parse, no walk before it (ADR 0164).
    if (mayPickFields && spans?.captureMessageContent !== true && route !== 'detect' && route !== 'generateContent' && route !== 'geminiCountTokens' && ex.get(llmTokenLimiters) === undefined) {
      // Checked to be a JSON object and its dispatch fields read; a text the walk does not take is parsed below.
      const fields = requestFields(raw);
      if (fields !== undefined) return dispatch(ex, route, fields, raw, undefined, false);
    }
    let body: Obj;
    try {
      const parsed = JSON.parse(raw.toString('utf8')) as unknown;
      if (!isObj(parsed)) return llmRequestError(400, 'request body is not a JSON object');
      // JSON.parse takes any depth; serialising, cloning or translating the body recurses (ADR 0148).
      if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) return llmRequestError(400, 'request body nested too deeply');
      body = parsed;
    } catch (err) {
      return llmRequestError(400, `invalid JSON body: ${(err as Error).message}`);
    }
    const client = route === 'detect' ? detectFormat(ex, body) : route;
    ex.set(LLM_CLIENT_FORMAT, client);
    // Gemini's own clients name the model (and streaming) in the path; the policy sees it as `model` (for aliases).
    const geminiPath = client === 'generateContent' || client === 'geminiCountTokens' ? parseGeminiPath(ex.path) : undefined;
    if (geminiPath?.model !== undefined && body.model === undefined) body.model = geminiPath.model;
    if (geminiPath !== undefined) ex.query = queryKeyToHeader(ex.headers, ex.query, GOOGLE_QUERY_KEY);

    if (policy) {
      policy.applyRequest(ex, client, body);
      return policy.guardRequest(ex, client, body).then((rejected) => rejected ?? dispatch(ex, client, body, raw, geminiPath, true));
    }
    return dispatch(ex, client, body, raw, geminiPath, true);
  };

  /**
   * The wire request made (the client's bytes when nothing changed them) and sent; the answer made the client's.
   * `body` is the parsed body when `whole`, else the picked fields of a checked text, parsed here once something
   * needs the rest (a model to change, a translation, the provider's body hook, token limits).
   */
  const dispatch = (ex: Exchange, client: LlmRouteType, body: Obj, raw: Buffer, geminiPath: ReturnType<typeof parseGeminiPath> | undefined, whole: boolean): Reply | Promise<Reply> => {
    // A virtual model (`ai.virtualModels`) the policy resolved: this backend's target says the model to send.
    const virtual = ex.get(LLM_VIRTUAL_MODEL);
    const model = virtual?.models.get(self) ?? provider.model ?? (typeof body.model === 'string' && body.model ? body.model : undefined);
    if (model === undefined) return llmRequestError(400, 'missing field: model not specified');
    // A model name names series, caches and spans: one of a client's size would make each of them that size.
    if (model.length > MAX_MODEL_NAME) return llmRequestError(400, `model name too long: at most ${MAX_MODEL_NAME} characters`);
    // The client's bytes are sent as they came unless something below changes the body (parse once, no
    // re-serialisation): a policy may have changed it, so its presence counts as a change.
    let changed = policy !== undefined || body.model !== model;
    const wire = provider.wireFormat(client, model);
    const clientFormat = formatOf(client);
    const wireFormat = wire === undefined ? undefined : formatOf(wire, provider.formats);
    const tr = clientFormat && wireFormat ? translationBetween(clientFormat, wireFormat) : undefined;
    // What this provider cannot carry, another backend of the route may: declined, failover passes it by (ADR 0150).
    if (wire === undefined || tr === undefined) return declineReply(llmRequestError(400, `unsupported route: the ${provider.kind} provider does not serve ${client} requests`));
    const limiters = ex.get(llmTokenLimiters);
    // Checked by `requestFields`: it parses, and is an object. (A route with token limits came parsed: `withBody`.)
    if (!whole && (changed || !tr.identity || provider.prepareBody !== undefined)) {
      body = JSON.parse(raw.toString('utf8')) as Obj;
      whole = true;
    }
    body.model = model;
    const stream = client === 'generateContent' ? geminiPath?.method === 'streamGenerateContent' : STREAMING_FORMATS.has(client) && body.stream === true;
    // OpenAI sends the usage chunk to a client that asks (`include_usage: true`); the gateway also to one that set no
    // `stream_options` (below). A client that set them otherwise gets none: translated, or asked for by a limit (below).
    let omitUsageChunk = stream && client === 'completions' && !tr.identity && body.stream_options !== undefined && !(isObj(body.stream_options) && body.stream_options.include_usage === true);
    // A final usage chunk, so token counts are known for streams too (BEHAVIOUR.md §4.6).
    let askUsage = false;
    if (stream && client === 'completions' && wire === 'completions') {
      if (body.stream_options === undefined) {
        body.stream_options = { include_usage: true };
        askUsage = true;
      } else if (limiters !== undefined) {
        // A limit settles on the real usage: a client's own options without it would make its streams free (ADR 0116).
        const own = body.stream_options;
        if (!isObj(own) || own.include_usage !== true) {
          body.stream_options = { ...(isObj(own) ? own : {}), include_usage: true };
          changed = true;
          omitUsageChunk = true;
        }
      }
    }

    // A field the translation cannot carry that asks for more than the default answer (ADR 0135): refused, unless
    // the operator chose to drop such fields (logged, so a client's missing choices can be explained).
    if (!tr.identity) {
      // Each client API refuses a `stream` that is not a boolean; translated, it would be dropped (an unstreamed answer).
      if (STREAMING_FORMATS.has(client) && body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
        return declineReply(llmRequestError(400, '`stream` must be a boolean'));
      }
      // Anthropic requires a positive integer `max_tokens`; translated, a request without one would run uncapped.
      if (client === 'messages' && !(Number.isSafeInteger(body.max_tokens) && (body.max_tokens as number) > 0)) {
        return declineReply(llmRequestError(400, '`max_tokens` is required: a positive integer'));
      }
      const unhonoured = unhonouredFields(client, wire, body);
      if (unhonoured.length > 0) {
        if (!config.dropUnsupportedParams) return declineReply(llmRequestError(400, `cannot translate the request: ${unhonouredMessage(provider.kind, unhonoured)}`));
        ex.logField('llm.droppedParams', droppedFields(unhonoured));
      }
    }
    let wireBody: Obj;
    try {
      wireBody = tr.request(body);
    } catch (err) {
      return declineReply(llmRequestError(400, `cannot translate the request: ${(err as Error).message}`));
    }
    // `ai.promptCaching`: the policy marks Anthropic bodies it sees; a body that became one here is marked now.
    if (wire === 'messages' && client !== 'messages' && policy?.promptCaching) applyAnthropicCacheMarkers(wireBody, policy.promptCaching);
    if (provider.prepareBody) {
      provider.prepareBody(wire, wireBody, { model, headers: ex.headers });
      changed = true;
    }
    // Only the usage option added: spliced into the client's bytes rather than the whole body serialised again.
    // Nested at most MAX_JSON_DEPTH levels (withBody; `requestFields` follows 64): serialised without running out of stack.
    const wireBytes = changed || !tr.identity ? Buffer.from(JSON.stringify(wireBody)) : askUsage ? withUsageOption(raw) : raw;
    ex.setBody(wireBytes);
    const h = ex.headers;
    delete h['content-encoding'];
    h['content-type'] = 'application/json';
    // Usage is read from the answer: ask for it uncompressed (a compressed one is still decoded).
    h['accept-encoding'] = 'identity';
    providerHeaders(provider, h, wire, withholdCookie);
    // The provider is asked for events whatever the client asked: a Gemini client without `alt=sse` reads an array.
    const jsonArray = stream && client === 'generateContent' && !asksForSse(ex.query);
    const target = pathOverride ?? splitPath(provider.path(wire, model, stream));
    ex.path = target.path;
    ex.query = target.query;

    const quote = (): LlmCallQuote => ({ provider: provider.kind, model, virtualModel: virtual?.name, maxOutputTokens: maxOutputTokens(body), price: priceOf(model) });
    const send = (): Promise<Reply> => {
      const call = new LlmCall(ex, provider.kind, model, stream, metrics, wireFormat!.operation, priceOf, spans);
      // What a stream cut before its usage is charged by: the prompt estimate token limits reserved (or would have), and
      // the most output the request allows. Read only then (the client's body parsed if it was not).
      if (stream)
        call.requestFigures = () => {
          const b = whole ? body : (JSON.parse(raw.toString('utf8')) as Obj);
          return { promptTokens: estimatePromptTokens(b), maxOutputTokens: maxOutputTokens(b) };
        };
      // The sampling settings on a recorded span (ADR 0180): from the parsed body, else picked out of the client's bytes.
      if (call.outcome) call.recordRequest(whole ? body : requestAttributeMembers(raw));
      // Content on the span only when the operator allows it (`tracing.captureMessageContent`).
      if (call.capturesContent) call.recordInput(clientFormat!, body);
      const request: LlmRequest = { client, clientFormat: clientFormat!, wire, wireFormat: wireFormat!, model, stream, translation: tr, omitUsageChunk, jsonArray, call, policy };
      let sent: Promise<Reply>;
      try {
        sent = call.run(() => upstream.forward(ex, onAttempt(ex, wire), stream ? STREAM_RAW : READ_WHOLE));
      } catch (err) {
        call.fail(err);
        return Promise.reject(err);
      }
      return sent.then(
        (reply) => answered(ex, reply, request),
        (err: unknown) => {
          call.fail(err);
          throw err;
        },
      );
    };
    // Only a route with token limits (a policy that set `llmTokenLimiters`) waits here.
    if (limiters) {
      // A token count generates nothing and reports no usage (which would keep the reservation): its limits are
      // checked, nothing reserved (ADR 0157).
      const counts = wireFormat!.operation === 'count_tokens';
      const refused = counts ? reserveTokens(ex, undefined, { ...quote(), maxOutputTokens: 0 }, 0) : reserveTokens(ex, body, quote());
      return refused instanceof Promise ? refused.then((r) => r ?? send()) : (refused ?? send());
    }
    return send();
  };

  /** The provider's answer in the client's terms; a failure there is the call's, answered 502. */
  const answered = (ex: Exchange, reply: Reply, request: LlmRequest): Reply | Promise<Reply> => answerReply(ex, reply, request, log);

  /** A body that could not be read or decoded: 413, 415 or 400 in the client's error shape; anything else thrown on. */
  const bodyFailed = (err: unknown): Reply => {
    if ((err instanceof GatewayError && err.status === 413) || err instanceof DecodedTooLargeError) return llmRequestError(413, 'request body too large');
    if (err instanceof UnsupportedEncodingError) return llmRequestError(415, err.message);
    if (err instanceof BadEncodingError) return llmRequestError(400, err.message);
    throw err;
  };

  const self: BackendInstance = {
    protocol: 'llm',
    label: config.name,
    // Several `ai` backends on a route fail over between them without a `retry` policy (ADR 0039).
    failover: FAILOVER,
    // Not `defaultTimeouts.backendRequestTimeout`: providers take long to answer a non-streamed completion.
    responseDeadlineMs: ctx.configSection(llmDeadlineSection),
    target: upstream,
    handle,
    // Gateway-made errors on this route (auth, rate limits, the errors above) in the client API's shape (DECIDED 4).
    shapeError: shapeClientError,
    // OpenAI Realtime and other WebSocket APIs pass through to the provider.
    upgrade: (ex, socket, head) => {
      // The provider's key conventions and default credential after backendAuth, as on every other request.
      const attempt = onAttempt(ex, passthroughHeaders(provider, ex, withholdCookie));
      // A realtime or Live session is read for its usage and charged as it goes (ADR 0190, 0192); other upgrades pass
      // as bytes.
      const dialect = meteredRealtime(policy?.routeType(ex.path), ex.path);
      if (dialect) return meteredUpgrade(realtime, dialect, ex, socket, head, attempt);
      // Any other one is not read: refused where limits or keys would not see it.
      const refused = unmeterable(ex, true);
      if (refused) throw refused;
      upstream.upgrade(ex, socket, head, attempt);
    },
  };
  // The route's `ai` policy resolves its virtual models' targets against this (a target without `model` uses it).
  ctx.loadState<AiBackendModels>(AI_BACKEND_MODELS, () => new Map()).set(self, provider.model ?? null);
  return self;
}
