import { randomBytes } from 'node:crypto';
import { RpcCode, RpcFailure, errorMessage } from '../../jsonrpc.ts';
import type { RpcId, RpcMessage } from '../../jsonrpc.ts';
import { DETACHED } from '../../responder.ts';
import type { Call, Responder } from '../../responder.ts';
import type { McpSession } from '../../session.ts';
import type { TargetConn } from '../../target-conn.ts';
import { INPUT_REQUEST_CAPABILITY, INPUT_REQUIRED_METHODS } from './protocol.ts';

type Json = Record<string, unknown>;

/** How long a 2026-07-28 call that returned `input_required` waits for the client's retry. */
export const INPUT_WAIT_MS = 5 * 60 * 1000;
/** `requestState` values the gateway mints (older targets' server-to-client requests); other values are a target's own. */
export const REQUEST_STATE_PREFIX = 'swy1.';

/** Calls waiting for a 2026-07-28 client's input, by the `requestState` handed out (one registry per backend). */
export interface InputRegistry {
  set(token: string, entry: InputEntry): void;
  get(token: string): InputEntry | undefined;
  delete(token: string): void;
}

export interface InputEntry {
  readonly session: McpSession;
  readonly call: Call;
  /** The call ended while it waited for the retry: its answer, for the retry. */
  readonly final?: { readonly message: RpcMessage; readonly httpStatus: number | undefined };
}

/** A server-to-client request of an `initialize`-revision target, held for a 2026-07-28 client as an embedded input request. */
interface HeldRequest {
  readonly conn: TargetConn;
  readonly id: RpcId;
  readonly method: string;
  readonly params: Json | undefined;
}

/** The input-required state of one call (2026-07-28 client, older target asking for sampling, elicitation, roots). */
interface InputState {
  /** Client capabilities of the request (what the client can answer). */
  readonly capabilities: Json;
  /** The tool or prompt name, or resource URI, the request names: its retry must name the same. */
  readonly subject: unknown;
  /** Requests sent to the client, by key, not answered yet. */
  readonly waiting: Map<string, HeldRequest>;
  /** Requests that arrived since the last round. */
  queued: HeldRequest[];
  token: string | undefined;
  seq: number;
  flush: NodeJS.Immediate | undefined;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Multi round-trip requests (SEP-2322) for targets that predate them: an `initialize`-revision target asks the
 * client something (sampling, elicitation, roots) while a 2026-07-28 request is open; the request is answered
 * `input_required` with the question embedded; the client's retry (carrying `requestState`) brings the answer, which
 * goes to the target, and the original call continues. One per session serving 2026-07-28 clients.
 */
export class InputRounds {
  private readonly session: McpSession;
  private readonly states = new Map<Call, InputState>();

  constructor(session: McpSession) {
    this.session = session;
  }

  /** Track input requests for a call of a 2026-07-28 client (called when the call starts). */
  expect(call: Call, message: RpcMessage, capabilities: Json): void {
    if (!call.done && INPUT_REQUIRED_METHODS.has(call.method)) {
      const subject = message.params?.name ?? message.params?.uri;
      this.states.set(call, { capabilities, subject, waiting: new Map(), queued: [], token: undefined, seq: 0, flush: undefined, timer: undefined });
    }
  }

  /** The `requestState` handed out for a call that waits for the client's retry, if any. */
  tokenOf(call: Call): string | undefined {
    return this.states.get(call)?.token;
  }

  /**
   * A target's server-to-client request: held for the call it belongs to. Refused (an error to the target) when no
   * call can carry it or the client did not declare the capability.
   */
  request(conn: TargetConn, m: RpcMessage): void {
    const session = this.session;
    const id = m.id as RpcId;
    const method = m.method!;
    const capability = INPUT_REQUEST_CAPABILITY[method];
    let call: Call | undefined;
    for (const c of session.calls.values()) if (!c.done && c.targets(conn.name) && INPUT_REQUIRED_METHODS.has(c.method)) call = c;
    const st = call && this.states.get(call);
    const refuse = (why: string): void => {
      session.logger.debug('refused a server-to-client request for a 2026-07-28 client', { target: conn.name, method, why });
      conn.respond(id, errorMessage(id, RpcCode.methodNotFound, `\`${method}\` is not available: ${why}`));
    };
    if (!capability) return refuse('the 2026-07-28 revision has no such input request');
    if (session.ephemeral || !session.inputRegistry) return refuse('the gateway route is stateless');
    if (!call || !st) return refuse('no tools/call, prompts/get or resources/read of the client is waiting on this target');
    const declared = st.capabilities[capability];
    if (declared === undefined || declared === null) return refuse(`the client did not declare the \`${capability}\` capability`);
    st.queued.push({ conn, id, method, params: m.params });
    // Requests that come together go out in one round.
    st.flush ??= setImmediate(() => this.flush(call));
  }

  /** Answer the call `input_required` with every request the client has not answered; the call waits for the retry. */
  private flush(call: Call): void {
    const st = this.states.get(call);
    if (!st || call.done) return;
    st.flush = undefined;
    for (const h of st.queued) st.waiting.set(`${h.conn.name}-${++st.seq}`, h);
    st.queued = [];
    if (st.waiting.size === 0 || call.responder === DETACHED) return;
    const inputRequests: Json = {};
    for (const [key, h] of st.waiting) {
      const params: Json = { ...h.params };
      delete params._meta;
      inputRequests[key] = { method: h.method, params };
    }
    if (!st.token) {
      st.token = REQUEST_STATE_PREFIX + randomBytes(18).toString('base64url');
      this.session.inputRegistry?.set(st.token, { session: this.session, call });
    }
    if (st.timer) clearTimeout(st.timer);
    st.timer = setTimeout(() => this.session.cancel(call, 'the client did not answer the input request in time'), INPUT_WAIT_MS);
    st.timer.unref?.();
    const responder = call.responder;
    call.responder = DETACHED;
    responder.final({ jsonrpc: '2.0', id: call.id, result: { resultType: 'input_required', inputRequests, requestState: st.token } });
  }

  /**
   * The retry of a call that returned `input_required`: pass the client's answers to the target, and serve the call
   * on the retry's response (another `input_required` round if questions remain).
   */
  resume(call: Call, message: RpcMessage, responder: Responder): RpcFailure | undefined {
    const st = this.states.get(call);
    if (call.done || !st || call.responder !== DETACHED) return new RpcFailure(RpcCode.invalidParams, 'Invalid params: requestState is unknown or expired', 400);
    if (message.method !== call.method || (message.params?.name ?? message.params?.uri) !== st.subject) {
      return new RpcFailure(RpcCode.invalidParams, `Invalid params: requestState belongs to another request (\`${call.method}\` of ${String(st.subject)})`, 400);
    }
    const responses = message.params?.inputResponses;
    if (responses !== undefined && (typeof responses !== 'object' || responses === null || Array.isArray(responses))) {
      return new RpcFailure(RpcCode.invalidParams, 'Invalid params: inputResponses must be an object', 400);
    }
    const answers = (responses ?? {}) as Json;
    for (const [key, value] of Object.entries(answers)) {
      if (st.waiting.has(key) && (typeof value !== 'object' || value === null || Array.isArray(value))) {
        return new RpcFailure(RpcCode.invalidParams, `Invalid params: inputResponses.${key} must be an object`, 400);
      }
    }
    if (st.timer) clearTimeout(st.timer);
    st.timer = undefined;
    for (const [key, h] of [...st.waiting]) {
      if (!(key in answers)) continue;
      st.waiting.delete(key);
      h.conn.respond(h.id, { jsonrpc: '2.0', id: h.id, result: answers[key] as Json });
    }
    call.responder = responder;
    this.session.touch();
    // Unanswered questions are asked again; else the call goes on and its answer comes on this response.
    if (st.waiting.size > 0 || st.queued.length > 0) this.flush(call);
    return undefined;
  }

  /** The call ended: drop its state; the target may still wait for answers the client never gave: tell it they will not come. */
  ended(call: Call): void {
    const st = this.states.get(call);
    if (!st) return;
    this.states.delete(call);
    if (st.flush) clearImmediate(st.flush);
    if (st.timer) clearTimeout(st.timer);
    if (st.token) this.session.inputRegistry?.delete(st.token);
    for (const h of [...st.waiting.values(), ...st.queued]) {
      h.conn.respond(h.id, errorMessage(h.id, RpcCode.internalError, `the client's request ended before it answered \`${h.method}\``));
    }
  }
}
