// The `mcp` backend spells out the protocol revisions' vocabulary (plugins/backends/mcp/revisions/*/protocol.ts)
// instead of importing `@modelcontextprotocol/core/internal`, which is not a public entry of the MCP SDK (issue 10
// item 7). This keeps the copies equal to what the SDK's public client entry exports, so an SDK update that adds a
// revision or renames a key fails here.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as sdk from '@modelcontextprotocol/client';
import { INITIALIZE_VERSIONS, LATEST_INITIALIZE_VERSION } from '../../plugins/backends/mcp/revisions/2025-11-25/protocol.ts';
import * as rev20260728 from '../../plugins/backends/mcp/revisions/2026-07-28/protocol.ts';

describe('MCP protocol constants match the SDK’s public exports', () => {
  it('the initialize revisions', () => {
    assert.deepEqual([...INITIALIZE_VERSIONS], [...sdk.SUPPORTED_PROTOCOL_VERSIONS]);
    assert.equal(LATEST_INITIALIZE_VERSION, '2025-11-25');
  });

  it('the 2026-07-28 `_meta` keys', () => {
    for (const name of ['PROTOCOL_VERSION_META_KEY', 'CLIENT_INFO_META_KEY', 'CLIENT_CAPABILITIES_META_KEY', 'LOG_LEVEL_META_KEY', 'SERVER_INFO_META_KEY', 'SUBSCRIPTION_ID_META_KEY'] as const) {
      assert.equal(rev20260728[name], sdk[name], name);
    }
  });
});
