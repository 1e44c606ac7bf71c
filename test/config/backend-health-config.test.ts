// Config errors of the backend health policies (issue 11 item 3): a probe can only be a path on the backend's
// own address, a backend without one address refuses `healthCheck`, and ejection times must be ordered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { compileError, headlines, routeWithPolicies } from './helpers.ts';

const route = routeWithPolicies;

describe('backend health config', () => {
  it('refuses a health check path that names another address', async () => {
    const err = await compileError(route(['healthCheck: { path: "http://169.254.169.254/latest" }']), { preset: fullPreset });
    assert.match(headlines(err)[0]!, /^test\.yaml:6:\d+: .*binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.healthCheck\.path/);
    const err2 = await compileError(route(['healthCheck: { path: "//evil.example/x" }']), { preset: fullPreset });
    assert.match(headlines(err2)[0]!, /healthCheck\.path/);
  });

  it('refuses healthCheck on a backend that does not forward to one address', async () => {
    const err = await compileError(
      route(['healthCheck: { path: /healthz }'], ['- mcp: { targets: [{ name: t, mcp: { host: 127.0.0.1, port: 9, path: /mcp } }] }']),
      { preset: fullPreset },
    );
    assert.match(headlines(err).join('\n'), /`healthCheck` needs a backend that forwards to one address/);
  });

  it('refuses a maxEjectionTime shorter than the baseEjectionTime', async () => {
    const err = await compileError(route(['outlierDetection: { baseEjectionTime: 60s, maxEjectionTime: 10s }']), { preset: fullPreset });
    assert.match(headlines(err)[0]!, /test\.yaml:6:\d+: `maxEjectionTime` must not be shorter than `baseEjectionTime`.*outlierDetection\.maxEjectionTime/);
  });
});
