import type { BroadcastChannel as Channel } from 'node:worker_threads';
import type { SharedEvents, SharedTopic } from '../sdk/shared.ts';

const NOBODY: SharedTopic = { post() {}, close() {} };
/** Kept messages the supervisor holds at most (oldest dropped first): a client ending sessions in a loop must not grow it. */
export const MAX_KEPT_EVENTS = 100_000;

/** Messages of `SharedEvents` kept for workers that start later, by topic (handed to a worker in its `workerData`). */
export type KeptMessages = Readonly<Record<string, readonly unknown[]>>;

/** One gateway process without workers: nobody else to tell. */
export class LocalEvents implements SharedEvents {
  readonly others = false;

  subscribe(): SharedTopic {
    return NOBODY;
  }
}

/** The channel a worker sends the messages to keep on (`post(message, keepMs)`), heard by its supervisor. */
function keptChannel(scope: string): Channel {
  const { BroadcastChannel } = process.getBuiltinModule('node:worker_threads');
  const channel = new BroadcastChannel(`${scope}#kept`);
  channel.unref();
  return channel;
}

/**
 * A worker's side: one BroadcastChannel per topic, named by its supervisor's `scope`, so the workers of one
 * supervisor hear each other and nobody else in the process. The channel does not keep the thread alive. `kept`:
 * the messages its supervisor kept for workers starting now, delivered to a topic's first subscriber first and then
 * dropped (a later subscriber of the topic, a reload's, would get them stale).
 */
export class WorkerEvents implements SharedEvents {
  readonly others = true;
  private readonly scope: string;
  private readonly kept: Map<string, readonly unknown[]>;
  private keeper: Channel | undefined;

  constructor(scope: string, kept: KeptMessages = {}) {
    this.scope = scope;
    this.kept = new Map(Object.entries(kept));
  }

  subscribe(topic: string, on: (message: unknown) => void): SharedTopic {
    const kept = this.kept.get(topic) ?? [];
    this.kept.delete(topic);
    for (const message of kept) on(message);
    const { BroadcastChannel } = process.getBuiltinModule('node:worker_threads');
    const channel = new BroadcastChannel(`${this.scope}:${topic}`);
    channel.onmessage = (event) => on((event as MessageEvent).data);
    channel.unref();
    let open = true;
    return {
      post: (message, keepMs) => {
        if (!open) return;
        channel.postMessage(message);
        if (keepMs !== undefined && keepMs > 0) (this.keeper ??= keptChannel(this.scope)).postMessage({ topic, message, keepMs });
      },
      close: () => {
        if (!open) return;
        open = false;
        channel.close();
      },
    };
  }
}

/**
 * The supervisor's side: the messages its workers posted with `keepMs`, each until its time is up, at most
 * MAX_KEPT_EVENTS, for the workers it starts later (`forWorker`). Without it a worker restarted after a session was
 * ended would resume the session from its sealed id.
 */
export class KeptEvents {
  private readonly channel: Channel;
  /** Kept messages in the order posted (so by expiry within a topic's keepMs), by arrival number. */
  private readonly kept = new Map<number, { readonly topic: string; readonly message: unknown; readonly until: number }>();
  private next = 0;

  constructor(scope: string) {
    this.channel = keptChannel(scope);
    this.channel.onmessage = (event) => this.keep((event as MessageEvent).data);
  }

  private keep(data: unknown): void {
    const { topic, message, keepMs } = (data ?? {}) as { topic?: unknown; message?: unknown; keepMs?: unknown };
    if (typeof topic !== 'string' || typeof keepMs !== 'number') return;
    this.kept.set(this.next++, { topic, message, until: Date.now() + keepMs });
    if (this.kept.size > MAX_KEPT_EVENTS) this.kept.delete(this.kept.keys().next().value!);
  }

  /** The messages still kept, by topic (expired ones are dropped here). */
  forWorker(): KeptMessages {
    const now = Date.now();
    const out: Record<string, unknown[]> = {};
    for (const [n, k] of this.kept) {
      if (k.until <= now) this.kept.delete(n);
      else (out[k.topic] ??= []).push(k.message);
    }
    return out;
  }

  close(): void {
    this.channel.close();
  }
}
