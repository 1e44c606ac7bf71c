// Issue 12 item 4: the admin UI's code loads only when /ui is requested, so a gateway nobody browses keeps its idle
// RSS. A module resolve hook (registered before the gateway is imported) records what this process loads.
import assert from 'node:assert/strict';
import { registerHooks } from 'node:module';
import { after, before, describe, it } from 'node:test';

const loaded: string[] = [];
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    loaded.push(result.url);
    return result;
  },
});
const { startGateway } = await import('../helpers/gateway.ts');
const { freePort } = await import('../helpers/ports.ts');

describe('admin UI is loaded on first use', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway({ binds: [{ port, listeners: [{ routes: [{ name: 'hello', policies: { directResponse: { status: 200, body: 'hi\n' } } }] }] }] });
  });
  after(() => gw.stop());

  it('serving traffic and the other admin endpoints loads none of kernel/admin/ui; GET /ui does', async () => {
    const ui = (): string[] => loaded.filter((u) => u.includes('/kernel/admin/ui/'));
    assert.equal((await fetch(`${gw.url(port)}/hello`)).status, 200);
    assert.equal((await fetch(`${gw.adminUrl}/config_dump`)).status, 200);
    assert.deepEqual(ui(), []);
    assert.equal((await fetch(`${gw.adminUrl}/ui/`)).status, 200);
    assert.ok(ui().some((u) => u.endsWith('/ui-server.ts')), 'ui-server.ts loaded by the first /ui request');
  });
});
