import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundedAdminHandler } from './admin-handler.ts';
import type { AdminRequest, Logger } from '../sdk/index.ts';

/** A logger keeping its error lines. */
function recorder(): { logger: Logger; errors: { message: string; fields: Record<string, unknown> }[] } {
  const errors: { message: string; fields: Record<string, unknown> }[] = [];
  const none = (): void => undefined;
  const logger = { error: (message: string, fields: Record<string, unknown> = {}) => errors.push({ message, fields }), warn: none, info: none, debug: none, child: () => logger } as unknown as Logger;
  return { logger, errors };
}

const REQ: AdminRequest = { method: 'GET', subpath: '/x', query: new URLSearchParams(), body: undefined };
const OWNER = { plugin: 'acmeAdmin', package: 'acme@1.0.0' };

describe('a plugin admin endpoint, bounded (ADR 0154)', () => {
  it('passes an answer through', async () => {
    const { logger } = recorder();
    assert.deepEqual(await boundedAdminHandler('/acme', async () => ({ status: 201, body: { ok: 1 } }), OWNER, logger, 1000)(REQ), { status: 201, body: { ok: 1 } });
  });

  it('one that never answers is a 504 at the deadline, logged naming the plugin', async () => {
    const { logger, errors } = recorder();
    const started = performance.now();
    const answer = await boundedAdminHandler('/acme', () => new Promise(() => {}), OWNER, logger, 50)(REQ);
    assert.ok(performance.now() - started < 1000);
    assert.equal(answer.status, 504);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!.message, /did not answer within 50ms/);
    assert.deepEqual({ plugin: errors[0]!.fields.plugin, package: errors[0]!.fields.package, path: errors[0]!.fields.path }, { ...OWNER, path: '/acme/x' });
  });

  it('one that throws is a 500 without its message; the log has it and names the plugin', async () => {
    const { logger, errors } = recorder();
    const answer = await boundedAdminHandler('/acme', () => {
      throw new Error('token=hunter2');
    }, OWNER, logger, 1000)(REQ);
    assert.deepEqual(answer, { status: 500, body: { error: { message: 'internal error' } } });
    assert.equal(errors[0]!.message, 'admin endpoint failed');
    assert.equal(errors[0]!.fields.plugin, 'acmeAdmin');
    assert.equal(errors[0]!.fields.error, 'token=hunter2');
  });

  it('an answer that is not { status, body } with a status and a JSON body is a 500 naming the plugin, not a TypeError later', async () => {
    for (const bad of [undefined, { status: 'ok', body: {} }, { status: 99, body: {} }, { status: 200, body: { n: 1n } }]) {
      const { logger, errors } = recorder();
      const answer = await boundedAdminHandler('/acme', async () => bad as never, OWNER, logger, 1000)(REQ);
      assert.deepEqual(answer, { status: 500, body: { error: { message: 'internal error' } } }, String(bad));
      assert.equal(errors[0]!.message, 'admin endpoint failed');
      assert.equal(errors[0]!.fields.plugin, 'acmeAdmin');
      assert.match(String(errors[0]!.fields.error), /not \{ status, body \}|JSON/);
    }
  });
});
