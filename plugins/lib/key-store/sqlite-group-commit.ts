// The embedded store's group commit (ADR 0090): reservations of one event-loop turn after its first wait for the
// turn's end and are written in one write transaction, each its own statement with its own check. Apart from
// sqlite-store.ts, which builds and runs each reservation's statement.
import type { CounterLine, CounterMemo } from './types.ts';

/** A reservation waiting for the turn's group commit. */
interface Grouped {
  readonly lines: readonly CounterLine[];
  readonly digest: string | undefined;
  readonly keyMemo: CounterMemo | undefined;
  readonly resolve: (refused: number) => void;
  readonly reject: (err: unknown) => void;
}

/** What a group is written with: the store's reservation statement and its transaction's statements. */
export interface GroupWriter {
  reserveNow(lines: readonly CounterLine[], digest: string | undefined, keyMemo: CounterMemo | undefined): number;
  begin(): void;
  commit(): void;
  /** Undo the transaction if one is open (the begin or a commit failed). */
  rollback(): void;
}

export class GroupCommit {
  private readonly writer: GroupWriter;
  /** Reservations asked for during this event-loop turn (after the first, they are grouped). */
  private turnCount = 0;
  /** The last turn with reservations had several: the first of the next one is grouped too (a busy store). */
  private busy = false;
  private turnArmed = false;
  private grouped: Grouped[] = [];
  private readonly endTurn = (): void => {
    this.turnArmed = false;
    this.busy = this.turnCount > 1;
    this.turnCount = 0;
    this.run();
  };

  constructor(writer: GroupWriter) {
    this.writer = writer;
  }

  /** The reservation's answer once the turn's group is written, or undefined when it is written at once (the turn's first, on a store not busy). */
  join(lines: readonly CounterLine[], digest: string | undefined, keyMemo: CounterMemo | undefined): Promise<number> | undefined {
    if (!this.turnArmed) {
      this.turnArmed = true;
      setImmediate(this.endTurn);
    }
    if (++this.turnCount > 1 || this.busy) return new Promise<number>((resolve, reject) => this.grouped.push({ lines, digest, keyMemo, resolve, reject }));
    return undefined;
  }

  /**
   * The waiting reservations in one write transaction: each is its own statement, checked against the counters as
   * the ones before it in the group left them (a refusal rolls back its statement only), so the bound is a single
   * reservation's; one commit writes each page they touched once (one WAL frame per page, not one per page per
   * request) and takes the file's locks once. Also called at the store's close.
   */
  run(): void {
    if (this.grouped.length === 0) return;
    const group = this.grouped;
    this.grouped = [];
    const w = this.writer;
    const answers: (number | { error: unknown })[] = [];
    try {
      w.begin();
      for (const g of group) {
        try {
          answers.push(w.reserveNow(g.lines, g.digest, g.keyMemo));
        } catch (error) {
          answers.push({ error });
        }
      }
      w.commit();
    } catch (err) {
      w.rollback();
      for (const g of group) g.reject(err);
      return;
    }
    for (let i = 0; i < group.length; i++) {
      const a = answers[i]!;
      if (typeof a === 'number') group[i]!.resolve(a);
      else group[i]!.reject(a.error);
    }
  }
}
