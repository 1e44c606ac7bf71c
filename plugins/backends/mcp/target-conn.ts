import type { Logger } from 'switchyard/sdk';
import { LOG_LINES_PER_SECOND, LogBudget } from '../../lib/mcp/log-budget.ts';
import { McpProtocolViolation, McpTargetBusy } from '../../lib/mcp/upstream-contract.ts';
import type { FlowGate, McpDiscovery, McpUpstream } from '../../lib/mcp/upstream-contract.ts';
import type { RpcId, RpcMessage } from './jsonrpc.ts';
import { withinDepth } from './message-depth.ts';
import { REV_2026_07_28 } from './revisions/2026-07-28/protocol.ts';
import { paramsForTarget } from './revisions/2026-07-28/envelope.ts';
import { targetRequestSpan } from './spans.ts';
import { capabilityNames, firstRequestId } from './target.ts';
import type { CompiledTarget, ConnHost } from './target.ts';
import { SessionGone, StartDeadline, StartupExpired, TARGET_BUSY, TARGET_FAILED, TARGET_TIMED_OUT, TargetError, deadlineIn, formatMs, reasonOf, sessionGone } from './target-errors.ts';
import type { FailureKind } from './target-errors.ts';

interface Pending {
  resolve(message: RpcMessage): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout | undefined;
  readonly gate: FlowGate | undefined; // the pace of the client its answer stream is relayed to (McpUpstream.flowGate)
}

/**
 * One client session's connection to one target. Started lazily (the session's `initialize`, or the first request
 * after a crash or a resume); ids of the requests it sends are its own counter, mapped back by the session.
 */
export class TargetConn {
  readonly target: CompiledTarget;
  private readonly host: ConnHost;
  private readonly logger: Logger;
  private upstream: McpUpstream | undefined;
  private starting: Promise<void> | undefined;
  state: 'idle' | 'ready' | 'down' | 'closed' = 'idle';
  /** Why the connection is down (for errors naming the target). */
  lastError: string | undefined;
  /** The target's own session id (streamable HTTP), when it has one. */
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  initResult: Record<string, unknown> | undefined;
  /** Capability names of the target; undefined until known. */
  capabilities: readonly string[] | undefined;
  /** The target is spoken to in the 2026-07-28 revision (its `server/discover` answer is `discovery`). */
  speaks20260728 = false;
  discovery: McpDiscovery | undefined;
  private resume: { sessionId: string; protocolVersion: string | undefined } | undefined;
  private readonly pending = new Map<number, Pending>();
  /** The last request id sent (`firstRequestId`: a resumed upstream session is shared with another gateway). */
  private seq: number;
  /** Why the connection died during the current start, if it did. */
  private downReason: string | undefined;
  /** Times the connection was (re)started, for logs. */
  starts = 0;
  private readonly violations = new LogBudget((count) => this.logger.warn('MCP target log lines left out', { count, limitPerSecond: LOG_LINES_PER_SECOND }));

  constructor(target: CompiledTarget, host: ConnHost, resume?: { sessionId?: string; protocolVersion?: string; capabilities?: string[] }) {
    this.target = target;
    this.host = host;
    this.logger = host.logger.child({ target: target.name });
    if (resume?.sessionId) this.resume = { sessionId: resume.sessionId, protocolVersion: resume.protocolVersion };
    this.seq = firstRequestId(resume?.sessionId !== undefined);
    if (resume?.capabilities) this.capabilities = resume.capabilities;
    if (resume?.protocolVersion) this.protocolVersion = resume.protocolVersion;
  }

  get name(): string {
    return this.target.name;
  }

  /** `target \`x\` (mcp: http://h:p/mcp)`: how messages name the target. */
  get label(): string {
    return `target \`${this.target.name}\` (${this.target.transport.kind}: ${this.target.transport.describe})`;
  }

  error(message: string, kind?: FailureKind): TargetError {
    return new TargetError(this.target.name, this.label, message, kind);
  }

  /** Read through a method so TypeScript does not narrow `state` across awaits. */
  isClosed(): boolean {
    return this.state === 'closed';
  }

  has(capability: string): boolean {
    return this.capabilities === undefined || this.capabilities.includes(capability);
  }

  /** Resolves once the target can take requests: started and initialized (or resumed). */
  ready(): Promise<void> {
    if (this.state === 'ready') return Promise.resolve();
    if (this.state === 'closed') return Promise.reject(this.error('is closed: the session ended'));
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async start(): Promise<void> {
    if (this.state === 'down') this.logger.info('restarting MCP target', { after: this.lastError });
    this.starts++;
    this.downReason = undefined;
    const ms = this.target.startupTimeoutMs;
    this.logger.debug('starting MCP target', { startupTimeoutMs: ms });
    const deadline = new StartDeadline(ms);
    try {
      await this.startWithin(deadline);
    } finally {
      deadline.done();
    }
  }

  /** A failure to start, as the client is told: a limit (503), the deadline (504), anything else (500). */
  private startFailure(err: unknown, reason: string): TargetError {
    if (err instanceof McpTargetBusy) return this.error(reason, TARGET_BUSY);
    return this.error(`failed to start: ${reason}`, err instanceof StartupExpired ? TARGET_TIMED_OUT : TARGET_FAILED);
  }

  private async startWithin(deadline: StartDeadline): Promise<void> {
    const resume = this.resume;
    let discovery: McpDiscovery | undefined;
    if (this.host.envelope && this.target.transport.discover) {
      try {
        const client = await deadline.race(this.host.targetClient(this.target));
        discovery = await deadline.race(this.target.transport.discover({ headers: client.headers, onAttempt: client.onAttempt, logger: this.logger }), 'answer `server/discover`');
      } catch (err) {
        this.state = 'down';
        this.lastError = (err as Error).message;
        throw this.startFailure(err, this.lastError);
      }
      if (this.isClosed()) throw this.error('is closed: the session ended');
    }
    if (discovery) return this.start20260728(discovery, deadline);
    let up: McpUpstream;
    try {
      const client = await deadline.race(this.host.targetClient(this.target));
      up = await deadline.race(
        this.target.transport.connect({
          resumeSessionId: resume?.sessionId,
          headers: client.headers,
          onAttempt: client.onAttempt,
          policies: this.target.policies,
          logger: this.logger,
          label: this.label,
        }),
        'connect',
      );
    } catch (err) {
      this.state = 'down';
      this.lastError = (err as Error).message;
      throw this.startFailure(err, this.lastError);
    }
    this.attach(up);
    try {
      if (resume?.protocolVersion) up.setProtocolVersion?.(resume.protocolVersion);
      await deadline.race(up.start(), this.target.transport.kind === 'stdio' ? 'start' : 'connect');
      if (this.isClosed()) throw new Error('the session ended while starting');
      if (resume) {
        this.resume = undefined;
        this.sessionId = resume.sessionId;
        this.state = 'ready';
        this.logger.debug('resumed MCP target session');
        return;
      }
      // No timer of its own: the start-up deadline bounds the answer (a pending request is failed with the start).
      const { response } = await deadline.race(this.send(up, 'initialize', this.host.initParams, 0), 'initialize');
      const answer = await deadline.race(response, 'initialize');
      if (answer.error) throw new Error(`initialize was refused: ${answer.error.message}`);
      const result = answer.result ?? {};
      if (typeof result.protocolVersion !== 'string') throw new Error('initialize answered without a protocolVersion');
      this.initResult = result;
      this.protocolVersion = result.protocolVersion;
      this.capabilities = capabilityNames(result.capabilities as Record<string, unknown> | undefined);
      up.setProtocolVersion?.(result.protocolVersion);
      await deadline.race(up.send({ jsonrpc: '2.0', method: 'notifications/initialized' }), 'initialize');
      this.sessionId = up.sessionId;
      if (this.isClosed()) throw new Error('the session ended while starting');
      this.state = 'ready';
      this.host.targetInitialized?.(this);
    } catch (err) {
      // When the connection died while starting, its reason (exit code, stderr) says more than the failed send.
      const reason = err instanceof StartupExpired || err instanceof McpTargetBusy ? err.message : (this.downReason ?? reasonOf(err).replace(/^stopped: /, ''));
      this.upstream = undefined;
      void up.close().catch(() => undefined);
      const failure = this.startFailure(err, reason);
      this.failPending(failure);
      if (resume && !this.isClosed() && !(err instanceof McpTargetBusy) && !(err instanceof StartupExpired)) {
        // The upstream session could not be resumed (gone, or the target restarted): start a fresh one.
        this.logger.info('could not resume the MCP target session; initializing a new one', { error: reason });
        this.resume = undefined;
        this.sessionId = undefined;
        return this.startWithin(deadline);
      }
      if (!this.isClosed()) this.state = 'down';
      this.lastError = reason;
      throw failure;
    }
  }

  /** Open a 2026-07-28 connection: nothing to negotiate, the target described itself in `server/discover`. */
  private async start20260728(discovery: McpDiscovery, deadline: StartDeadline): Promise<void> {
    let up: McpUpstream | undefined;
    try {
      const client = await deadline.race(this.host.targetClient(this.target));
      up = await deadline.race(
        this.target.transport.connect({ headers: client.headers, onAttempt: client.onAttempt, policies: this.target.policies, logger: this.logger, label: this.label, revision: REV_2026_07_28 }),
        'connect',
      );
      this.attach(up);
      await deadline.race(up.start(), 'connect');
    } catch (err) {
      this.upstream = undefined;
      if (up) void up.close().catch(() => undefined);
      this.state = 'down';
      this.lastError = reasonOf(err);
      throw this.startFailure(err, this.lastError);
    }
    if (this.isClosed()) {
      this.upstream = undefined;
      void up.close().catch(() => undefined);
      throw this.error('is closed: the session ended');
    }
    this.speaks20260728 = true;
    this.discovery = discovery;
    this.protocolVersion = REV_2026_07_28;
    this.capabilities = capabilityNames(discovery.capabilities);
    this.initResult = { protocolVersion: REV_2026_07_28, capabilities: discovery.capabilities, serverInfo: discovery.serverInfo, instructions: discovery.instructions };
    this.state = 'ready';
    this.logger.debug('MCP target speaks the 2026-07-28 revision');
  }

  private attach(up: McpUpstream): void {
    this.upstream = up;
    up.flowGate = (id) => this.pending.get(Number(id))?.gate;
    up.onmessage = (m) => {
      const taken = this.upstream === up ? withinDepth(m as RpcMessage, this.label, (why) => this.violations.take() && this.logger.warn('MCP target sent something that is not MCP; ignored', { error: why })) : undefined;
      if (taken) this.onMessage(taken);
    };
    up.onerror = (e) => {
      if (this.upstream !== up) return;
      // At most LOG_LINES_PER_SECOND lines: a target may send nothing else, as fast as it can.
      if (e instanceof McpProtocolViolation) return void (this.violations.take() && this.logger.warn('MCP target sent something that is not MCP; ignored', { error: e.message }));
      this.lastError = e.message;
      this.logger.debug('MCP target reported an error', { error: e.message });
    };
    up.onclose = () => {
      if (this.upstream === up) this.onDown(this.lastError ?? 'closed the connection');
    };
  }

  private onMessage(m: RpcMessage): void {
    if (m.method === undefined) {
      const id = typeof m.id === 'number' ? m.id : Number(m.id);
      const p = this.pending.get(id);
      if (!p) return this.logger.debug('MCP target answered an unknown request id', { id: m.id });
      this.pending.delete(id);
      if (p.timer) clearTimeout(p.timer);
      p.resolve(m);
      return;
    }
    this.host.fromTarget(this, m);
  }

  private onDown(reason: string): void {
    this.upstream = undefined;
    this.downReason = reason;
    if (this.state === 'closed') return;
    this.state = 'down';
    this.lastError = reason;
    this.logger.warn('MCP target connection lost; it restarts on the next request', { reason });
    this.failPending(this.error(`stopped: ${reason}`));
    this.host.targetDown?.(this);
  }

  private failPending(error: Error): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      if (p.timer) clearTimeout(p.timer);
      p.reject(error);
    }
  }

  /** Send a request on `up`; `onStarted` gets its id at once (an HTTP `send` resolves with the answer's headers). */
  private async send(up: McpUpstream, method: string, params: Record<string, unknown> | undefined, timeoutMs: number, requestId?: string, onStarted?: (id: number) => void, gate?: FlowGate): Promise<{ id: number; response: Promise<RpcMessage> }> {
    const id = ++this.seq;
    let pending!: Pending;
    const response = new Promise<RpcMessage>((resolve, reject) => {
      pending = { resolve, reject, timer: undefined, gate };
    });
    response.catch(() => undefined);
    this.pending.set(id, pending);
    if (timeoutMs > 0) {
      pending.timer = setTimeout(() => {
        this.pending.delete(id);
        const source = this.target.requestTimeoutSource;
        pending.reject(this.error(`did not answer \`${method}\` within ${formatMs(timeoutMs)}${source ? ` (${source})` : ''}`, TARGET_TIMED_OUT));
        if (this.upstream?.cancel) this.upstream.cancel(id);
        else this.notify('notifications/cancelled', { requestId: id, reason: 'the gateway timed out' });
      }, timeoutMs);
    }
    const message: RpcMessage = { jsonrpc: '2.0', id, method };
    const sent = method === 'initialize' ? params : paramsForTarget(method, params, this.host.envelope, this.speaks20260728);
    if (sent !== undefined) message.params = sent;
    try {
      // A transport whose send hangs (an HTTP target that never answers) must not outlast the request's deadline.
      const options = requestId === undefined ? undefined : { clientRequestId: requestId };
      const sending = up.send(message as never, options);
      onStarted?.(id);
      // With a deadline, the answer or the deadline may come first; without, `send`'s own failure names the cause.
      await (pending.timer ? Promise.race([sending, response]) : sending);
    } catch (err) {
      this.pending.delete(id);
      if (pending.timer) clearTimeout(pending.timer);
      if (err instanceof TargetError) throw err;
      if (err instanceof McpTargetBusy) throw this.error(`did not get request \`${method}\`: ${err.message}`, TARGET_BUSY);
      const deadline = deadlineIn(err);
      if (deadline) throw this.error(deadline.describe(method), TARGET_TIMED_OUT);
      if (method !== 'initialize' && this.sessionId !== undefined && sessionGone(err)) throw new SessionGone((err as Error).message);
      throw this.error(`request \`${method}\` failed: ${(err as Error).message}`);
    }
    return { id, response };
  }

  /**
   * Send a request (starting the target first if needed). `onSent` receives the upstream id once the request is
   * on its way (for cancellation). A target whose session expired is re-initialized and the request sent again.
   */
  async request(method: string, params: Record<string, unknown> | undefined, onSent?: (id: number) => boolean, requestId?: string, gate?: FlowGate): Promise<RpcMessage> {
    const spans = this.host.spans;
    if (!spans?.enabled) return this.requestOnce(method, params, onSent, requestId, gate);
    return targetRequestSpan(spans, this.target.name, method, params, (p) => this.requestOnce(method, p, onSent, requestId, gate));
  }

  private async requestOnce(method: string, params: Record<string, unknown> | undefined, onSent?: (id: number) => boolean, requestId?: string, gate?: FlowGate): Promise<RpcMessage> {
    for (let attempt = 0; ; attempt++) {
      await this.ready();
      const up = this.upstream;
      if (!up) throw this.error(`stopped: ${this.lastError ?? 'not connected'}`);
      try {
        const started = onSent === undefined ? undefined : (id: number): void => void (onSent(id) || this.abandon(id, 'the client cancelled the request'));
        const { response } = await this.send(up, method, params, this.target.requestTimeoutMs, requestId, started, gate);
        return await response;
      } catch (err) {
        if (!(err instanceof SessionGone) || attempt > 0) throw err;
        this.logger.info('MCP target session expired upstream; initializing a new one');
        this.upstream = undefined;
        void (up.detach ?? up.close).call(up).catch(() => undefined);
        this.sessionId = undefined;
        this.state = 'down';
        this.lastError = 'the upstream session expired';
      }
    }
  }

  /**
   * Stop waiting for the answer to upstream request `id` (its client cancelled it: a cancelled request may never
   * be answered) and tell the target.
   */
  abandon(id: number, reason: string): void {
    const p = this.pending.get(id);
    if (p) {
      this.pending.delete(id);
      if (p.timer) clearTimeout(p.timer);
      p.reject(this.error(`request cancelled: ${reason}`));
    }
    if (this.upstream?.cancel) this.upstream.cancel(id);
    else this.notify('notifications/cancelled', { requestId: id, reason });
  }

  /** Send a notification if connected (cancellations, client notifications). Failures are logged. */
  notify(method: string, params?: Record<string, unknown>): void {
    const up = this.upstream;
    if (!up || this.state !== 'ready') return;
    const message: RpcMessage = { jsonrpc: '2.0', method };
    if (params !== undefined) message.params = params;
    up.send(message as never).catch((err: Error) => this.logger.debug('could not notify MCP target', { method, error: err.message }));
  }

  /** Pass the client's response to a server-to-client request back to the target. */
  respond(id: RpcId, message: RpcMessage): void {
    const up = this.upstream;
    if (!up || this.state !== 'ready') return this.logger.debug('dropped a client response: the target is not connected', { id });
    const out: RpcMessage = message.error ? { jsonrpc: '2.0', id, error: message.error } : { jsonrpc: '2.0', id, result: message.result ?? {} };
    up.send(out as never).catch((err: Error) => this.logger.debug('could not pass a response to MCP target', { error: err.message }));
  }

  /** Stop the connection; `terminate` ends the upstream session too (client DELETE, idle expiry), else it is left for another replica. */
  async close(terminate: boolean): Promise<void> {
    this.state = 'closed';
    this.failPending(this.error('is closed: the session ended'));
    const up = this.upstream;
    this.upstream = undefined;
    if (!up) return;
    try {
      if (!terminate && up.detach) await up.detach();
      else await up.close();
    } catch (err) {
      this.logger.debug('closing MCP target failed', { error: (err as Error).message });
    }
  }
}
