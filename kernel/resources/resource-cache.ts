import type { ResourceCache } from '../sdk/index.ts';

interface Entry {
  value: unknown;
  dispose: ((value: unknown) => void | Promise<void>) | undefined;
  /** Generations (snapshots) using this resource. */
  readonly users: Set<number>;
}

/**
 * Long-lived resources shared by config generations. A compile marks what it uses; when an old generation
 * is retired, whatever no live generation uses is disposed. So an unchanged upstream pool, JWKS cache or
 * stdio process survives a reload, and a removed one is closed once its last request is done.
 */
export class GenerationalResources {
  private readonly entries = new Map<string, Entry>();

  /** The view one compile uses; everything it touches is marked as used by `generation`. */
  forGeneration(generation: number): ResourceCache {
    return {
      get: <T>(key: string, create: () => T, dispose?: (value: T) => void | Promise<void>): T => {
        let entry = this.entries.get(key);
        if (!entry) {
          entry = { value: create(), dispose: dispose as Entry['dispose'], users: new Set() };
          this.entries.set(key, entry);
        }
        entry.users.add(generation);
        return entry.value as T;
      },
    };
  }

  /** Drop `generation`'s claims and dispose what is left unused. */
  async release(generation: number): Promise<void> {
    const work: Promise<void>[] = [];
    for (const [key, entry] of this.entries) {
      entry.users.delete(generation);
      if (entry.users.size === 0) {
        this.entries.delete(key);
        if (entry.dispose) work.push(Promise.resolve().then(() => entry.dispose!(entry.value)).catch(() => undefined));
      }
    }
    await Promise.all(work);
  }

  async disposeAll(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => Promise.resolve().then(() => e.dispose?.(e.value)).catch(() => undefined)));
  }

  get size(): number {
    return this.entries.size;
  }
}
