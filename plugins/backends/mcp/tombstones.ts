/** Stores no config uses any more whose tombstones are still kept, at most (the oldest gone first). */
const MAX_GONE = 16;

/**
 * The ids of ended sessions, by session store (its resource key: the backend's config and the sealing key), kept
 * past the store. A reload that changes an `mcp` backend and a later one that changes it back make a new store
 * that unseals the old store's ids: without the old tombstones a session its client ended (DELETE) would be
 * resumed from its id (ADR 0139). A gone store's tombstones are kept while one is in force (24 h), for the
 * MAX_GONE stores gone most recently: each is bounded by MAX_TOMBSTONES already.
 */
class KeptTombstones {
  /** Tombstones (session identity -> refused until, epoch ms) by store key; gone stores last, oldest first. */
  private readonly byStore = new Map<string, Map<string, number>>();
  private readonly gone = new Set<string>();

  /** The tombstones of the store `key`: those its predecessor under the same key left, when still in force. */
  of(key: string): Map<string, number> {
    this.gone.delete(key);
    let ended = this.byStore.get(key);
    if (!ended) this.byStore.set(key, (ended = new Map()));
    return ended;
  }

  /** The store `key` was disposed: keep its tombstones in force for a store made under the same key later. */
  left(key: string): void {
    const ended = this.byStore.get(key);
    if (!ended) return;
    const now = Date.now();
    for (const [u, until] of ended) if (until <= now) ended.delete(u);
    this.byStore.delete(key);
    this.gone.delete(key);
    if (ended.size === 0) return;
    this.byStore.set(key, ended);
    this.gone.add(key);
    for (const old of this.gone) {
      if (this.gone.size <= MAX_GONE) break;
      this.gone.delete(old);
      this.byStore.delete(old);
    }
  }
}

const byGateway = new WeakMap<object, KeptTombstones>();

/**
 * The kept tombstones of one gateway, named by an object that lives as long as it does and is the same for all its
 * compiles (`ctx.sharedEvents`): two gateways in one process (tests) are two replicas. With `config.workers` each
 * worker has its own, its stores hearing the other workers' ends.
 */
export function keptTombstones(gateway: object): KeptTombstones {
  let kept = byGateway.get(gateway);
  if (!kept) byGateway.set(gateway, (kept = new KeptTombstones()));
  return kept;
}
