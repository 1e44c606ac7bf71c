import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AdminSource } from '../gateway-endpoints.ts';
import type { UiHandler } from '../admin-servers.ts';
import { TailHub } from './tail-hub.ts';
import { proxyToBind } from './bind-proxy.ts';
import { uiAccess } from './ui-access.ts';
import { isLoopbackAddress } from '../admin-access.ts';
import { readAdminBody } from '../admin-body.ts';
import { PROMETHEUS_TEXT } from '../../telemetry/metrics.ts';

/** The page, script and stylesheet, read once from this folder (no CDN, no bundler: they work offline). */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/ui': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/ui/charts.js': { file: 'charts.js', type: 'text/javascript; charset=utf-8' },
  '/ui/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};
const ASSET_DIR = new URL('./assets/', import.meta.url);
/** The project's docs folder, present when running from a checkout: the per-policy links open it. */
const DOCS_DIR = new URL('../../../docs/', import.meta.url);
const DOC_NAME = /^[a-z0-9-]+\.md$/;
/**
 * Validations at once, running or waiting: each compiles a config (up to 1 MiB) on the gateway's own event loop,
 * so they run one after another and a burst beyond this is refused before its body is read.
 */
const MAX_VALIDATIONS = 5;

/** The page may load only its own files; nothing inline, nothing from elsewhere. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(`${JSON.stringify(body)}\n`);
}

/**
 * A JSON body. Only `application/json` is read: a cross-site HTML form cannot send it, so a page elsewhere cannot
 * make the UI validate or call anything (the Host/Origin check refuses the rest, ADR 0017).
 */
async function jsonBody(req: IncomingMessage, res: ServerResponse): Promise<Record<string, unknown> | undefined> {
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    json(res, 415, { error: { message: 'the body must be JSON (content-type: application/json)' } });
    return undefined;
  }
  try {
    const value = JSON.parse((await readAdminBody(req)).toString('utf8')) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    json(res, 400, { error: { message: 'the body must be a JSON object' } });
  } catch (err) {
    json(res, err instanceof RangeError ? 413 : 400, { error: { message: err instanceof RangeError ? 'body too large' : 'invalid JSON body' } });
  }
  return undefined;
}

/** The admin UI's handler over a source (docs/admin-ui.md, ADR 0038). Built on the first request to `/ui`. */
export function uiHandler(source: AdminSource): UiHandler {
  const cache = new Map<string, Buffer>();
  const tail = new TailHub(source);
  let validations = 0;
  let lastValidation: Promise<unknown> = Promise.resolve();
  const asset = async (name: string): Promise<Buffer> => {
    let body = cache.get(name);
    if (!body) cache.set(name, (body = await readFile(new URL(name, ASSET_DIR))));
    return body;
  };

  const route = async (req: IncomingMessage, res: ServerResponse, bound: AddressInfo): Promise<void> => {
    const refused = uiAccess(source.adminUi?.(), isLoopbackAddress(bound.address));
    if (refused) {
      res.writeHead(refused.status, { 'content-type': 'text/plain', ...refused.headers }).end(`${refused.message}\n`);
      return;
    }
    const url = new URL(req.url ?? '/', 'http://admin');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const file = ASSETS[path];
    if (file) {
      if (method !== 'GET' && method !== 'HEAD') return json(res, 405, { error: { message: 'method not allowed' } });
      const body = await asset(file.file);
      res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache', 'content-security-policy': CSP, 'x-content-type-options': 'nosniff' });
      res.end(method === 'HEAD' ? undefined : body);
      return;
    }
    if (path.startsWith('/ui/docs/')) {
      const name = path.slice('/ui/docs/'.length);
      if (!DOC_NAME.test(name)) return json(res, 404, { error: { message: 'no such page' } });
      try {
        const text = await readFile(new URL(name, DOCS_DIR));
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(text);
      } catch {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`docs/${name} is not part of this installation; see the project's repository\n`);
      }
      return;
    }
    const key = `${method} ${path}`;
    switch (key) {
      case 'GET /ui/api/config':
        return json(res, 200, await source.configDump());
      case 'GET /ui/api/metrics': {
        const text = await source.metrics();
        res.writeHead(200, { 'content-type': PROMETHEUS_TEXT, 'cache-control': 'no-store' }).end(text);
        return;
      }
      case 'POST /ui/api/validate': {
        if (!source.validate) return json(res, 501, { error: { message: 'this gateway cannot validate configs here' } });
        if (validations >= MAX_VALIDATIONS) {
          res.setHeader('retry-after', '1');
          return json(res, 429, { error: { message: `${MAX_VALIDATIONS} validations are running or waiting; try again shortly` } });
        }
        validations++;
        try {
          const body = await jsonBody(req, res);
          if (!body) return;
          if (typeof body.text !== 'string') return json(res, 400, { error: { message: '`text` (the config as YAML or JSON) is required' } });
          const validate = source.validate.bind(source, body.text);
          const run = lastValidation.then(validate);
          lastValidation = run.catch(() => undefined);
          return json(res, 200, await run);
        } finally {
          validations--;
        }
      }
      case 'GET /ui/api/tail':
        return tail.attach(req, res);
      case 'POST /ui/api/call': {
        const body = await jsonBody(req, res);
        if (!body) return;
        return proxyToBind(await source.configDump(), body, res);
      }
      default:
        return json(res, 404, { error: { message: `no ${method} ${path} in the admin UI` } });
    }
  };

  return (req, res, bound) => {
    route(req, res, bound).catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, { error: { message: (err as Error)?.message ?? String(err) } });
      else res.end();
    });
  };
}
