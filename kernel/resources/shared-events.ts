import type { SharedEvents, SharedTopic } from '../sdk/shared.ts';

const NOBODY: SharedTopic = { post() {}, close() {} };

/** One gateway process without workers: nobody else to tell. */
export class LocalEvents implements SharedEvents {
  readonly others = false;

  subscribe(): SharedTopic {
    return NOBODY;
  }
}

/**
 * A worker's side: one BroadcastChannel per topic, named by its supervisor's `scope`, so the workers of one
 * supervisor hear each other and nobody else in the process. The channel does not keep the thread alive.
 */
export class WorkerEvents implements SharedEvents {
  readonly others = true;
  private readonly scope: string;

  constructor(scope: string) {
    this.scope = scope;
  }

  subscribe(topic: string, on: (message: unknown) => void): SharedTopic {
    const { BroadcastChannel } = process.getBuiltinModule('node:worker_threads');
    const channel = new BroadcastChannel(`${this.scope}:${topic}`);
    channel.onmessage = (event) => on((event as MessageEvent).data);
    channel.unref();
    let open = true;
    return {
      post: (message) => {
        if (open) channel.postMessage(message);
      },
      close: () => {
        if (!open) return;
        open = false;
        channel.close();
      },
    };
  }
}
