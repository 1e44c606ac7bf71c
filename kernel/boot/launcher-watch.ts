/**
 * `npx switchyard` and `npm start` run the gateway under `npm -> sh -c -> node`. npm forwards SIGTERM and SIGINT to
 * the shell only; the shell dies of it without passing it on, and the gateway, reparented, kept serving after
 * `docker stop` or a service manager's stop (ADR 0161). Started by npm (it sets `npm_lifecycle_event`), the gateway
 * takes the loss of its parent as the stop it was not sent. Anything else (a service manager, a shell's `&`) is left
 * alone: a daemon outliving the shell that started it is wanted there.
 */

/** How often the parent is checked: a stop arrives within this, well inside any orchestrator's grace period. */
const CHECK_EVERY_MS = 1000;

/**
 * Call `stop` once if this process was started by npm and its parent goes away. Returns a function that ends the
 * watch. The timer never keeps the process alive.
 */
export function stopWhenNpmLauncherGoes(stop: () => void, env: NodeJS.ProcessEnv = process.env): () => void {
  const parent = process.ppid;
  if (!env.npm_lifecycle_event || parent <= 1) return () => undefined;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, CHECK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
