// A GCE metadata server stand-in on 127.0.0.1, the Google auth library's default credential source on Google Cloud,
// with the environment pointed at it (and away from every other credential source) until `close()`.
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { withEnv } from './env.ts';
import { testTempDir } from './temp-dir.ts';

export interface GceMetadata {
  readonly port: number;
  /** How many access tokens were handed out. */
  readonly tokenCalls: number;
  close(): Promise<void>;
}

/** Serves `accessToken` as the default service account's token, and `projectId`. */
export async function startGceMetadata(accessToken: string, projectId = 'my-proj'): Promise<GceMetadata> {
  let tokenCalls = 0;
  const server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://metadata').pathname;
    const reply = (status: number, body: string, type = 'application/text'): void => {
      res.writeHead(status, { 'metadata-flavor': 'Google', 'content-type': type });
      res.end(body);
    };
    if (req.headers['metadata-flavor'] !== 'Google') return reply(403, 'Missing Metadata-Flavor:Google header.');
    if (path === '/computeMetadata/v1/instance' || path === '/computeMetadata/v1/instance/') return reply(200, 'attributes/\nservice-accounts/\n');
    if (path === '/computeMetadata/v1/universe/universe-domain') return reply(200, 'googleapis.com');
    if (path === '/computeMetadata/v1/project/project-id') return reply(200, projectId);
    if (path === '/computeMetadata/v1/instance/service-accounts/default/token') {
      tokenCalls++;
      return reply(200, JSON.stringify({ access_token: accessToken, expires_in: 3599, token_type: 'Bearer' }), 'application/json');
    }
    reply(404, 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const env = withEnv({
    GCE_METADATA_HOST: `127.0.0.1:${port}`,
    GCE_METADATA_IP: undefined,
    METADATA_SERVER_DETECTION: undefined,
    GOOGLE_APPLICATION_CREDENTIALS: undefined,
    CLOUDSDK_CONFIG: testTempDir('switchyard-gcloud-'),
    // The project is known, so the library never runs `gcloud config config-helper` to find it: where the Cloud
    // SDK is installed that takes 2-5 s, eating the gateway's 5 s token deadline on a busy machine.
    GOOGLE_CLOUD_PROJECT: projectId,
  });
  return {
    port,
    get tokenCalls() {
      return tokenCalls;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      env.restore();
    },
  };
}
