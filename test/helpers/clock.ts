/**
 * This process's wall clock (Date.now) stepped forward on demand, as an NTP step would: a test that must let a
 * duration pass which the code under test measures with Date.now (a token's expiry, a sum's age) steps over it
 * instead of sleeping it out. Timers are not moved (code that waits on one still waits). Install it before building
 * anything that keeps Date.now as a function value (`now: Date.now`), and restore it when done.
 */
export interface SteppedClock {
  /** Moves the clock forward by `ms`. */
  step(ms: number): void;
  /** Puts the real Date.now back. */
  restore(): void;
}

export function steppedClock(): SteppedClock {
  const real = Date.now;
  let offset = 0;
  Date.now = () => real() + offset;
  return {
    step(ms) {
      offset += ms;
    },
    restore() {
      Date.now = real;
    },
  };
}
