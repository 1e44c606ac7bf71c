import { setFlagsFromString } from 'node:v8';
if (process.argv[2]) setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
import { GoogleAuth } from 'google-auth-library';
import { startGceMetadata } from './test/helpers/gce-metadata.ts';
const md = await startGceMetadata('tok', 'p');
const t = performance.now();
try {
  const auth = new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/cloud-platform'] });
  const client = await auth.getClient();
  console.log('token', (await client.getAccessToken()).token, (performance.now() - t).toFixed(0), 'ms');
} catch (e) { console.log('ERR', (e as Error).message, (performance.now() - t).toFixed(0)); }
await md.close();
