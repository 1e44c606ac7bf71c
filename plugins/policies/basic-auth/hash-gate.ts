/**
 * One slow password hash (bcrypt, SHA-crypt) at a time per process, with a bounded queue.
 *
 * They run on the event loop in slices (bcryptjs: up to 100 ms each, yielding with `setImmediate`), and every
 * pending hash runs one slice before the loop reads a socket again: 200 wrong passwords at once held every other
 * request of the gateway for about 27 s. Run one at a time, a hash costs the rest of the gateway one slice per
 * loop turn, and a flood costs it nothing more: past the queue a request is turned away at once.
 */
export class HashGate {
  private running = false;
  private readonly waiting: (() => void)[] = [];
  private readonly maxWaiting: number;

  constructor(maxWaiting: number) {
    this.maxWaiting = maxWaiting;
  }

  /**
   * Run `task` when no other is running: its promise, or undefined when the queue is full (the task never runs).
   * A task that throws rejects its promise and lets the next one run.
   */
  run<T>(task: () => Promise<T>): Promise<T> | undefined {
    if (!this.running) {
      this.running = true;
      return this.settle(task);
    }
    if (this.waiting.length >= this.maxWaiting) return undefined;
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => this.settle(task));
  }

  /** Tasks waiting (tests and diagnostics). */
  get queued(): number {
    return this.waiting.length;
  }

  private settle<T>(task: () => Promise<T>): Promise<T> {
    let done: Promise<T>;
    try {
      done = task();
    } catch (err) {
      done = Promise.reject(err as Error);
    }
    return done.finally(() => {
      const next = this.waiting.shift();
      // The running slot passes straight to the next waiter, so a newcomer cannot overtake the queue.
      if (next) next();
      else this.running = false;
    });
  }
}
