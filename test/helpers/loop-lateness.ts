import assert from 'node:assert/strict';

/**
 * Data-plane requests to `url`, one every 50 ms, until `running` settles; each answer must be `body`. Resolves with
 * how late each was (ms). The client shares an in-process gateway's event loop, so a stall shows as a late
 * iteration, in the request or in the pause after it (timing the request alone misses a stall in the pause).
 */
export async function requestsWhile(running: Promise<unknown>, url: string, body: string): Promise<number[]> {
  let done = false;
  void running.then(
    () => (done = true),
    () => (done = true),
  );
  const lateness: number[] = [];
  while (!done) {
    const started = Date.now();
    const res = await fetch(url);
    assert.equal(await res.text(), body);
    await new Promise((resolve) => setTimeout(resolve, 50));
    lateness.push(Date.now() - started - 50);
  }
  return lateness;
}
