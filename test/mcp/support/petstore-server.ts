// A real Petstore API for tests: openapi-backend driven by the 3.0 Petstore document of @readme/oas-examples,
// served under /v2 on 127.0.0.1 (a free port). Adapted from REAL-PEERS.md appendix `petstore-server.mjs`.
// Four operations have in-memory handlers; the rest answer with mocks generated from the document. Requests
// are validated (400 with the errors). It also serves its own document at /openapi.json and /openapi.yaml.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { OpenAPIBackend } from 'openapi-backend';
import type { Context } from 'openapi-backend';

const require = createRequire(import.meta.url);
export const PETSTORE_JSON = require.resolve('@readme/oas-examples/3.0/json/petstore.json');
export const PETSTORE_YAML = require.resolve('@readme/oas-examples/3.0/yaml/petstore.yaml');

interface Pet {
  id: number;
  name: string;
  status?: string;
  photoUrls: string[];
  [key: string]: unknown;
}

/** One request as the Petstore received it. */
export interface PetstoreRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Petstore {
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly received: PetstoreRequest[];
  close(): Promise<void>;
}

/** Start a Petstore on 127.0.0.1 (port 0: the OS picks a free one). Pet 1 is `doggie`, available. */
export async function startPetstore(): Promise<Petstore> {
  const pets = new Map<number, Pet>([[1, { id: 1, name: 'doggie', status: 'available', photoUrls: [] }]]);
  let nextId = 2;
  const api = new OpenAPIBackend({
    definition: PETSTORE_JSON,
    apiRoot: '/v2',
    quick: false,
    // Formats such as date-time are not needed for these checks; declaring them silences ajv's warnings.
    customizeAjv: (ajv) => {
      for (const format of ['date-time', 'int32', 'int64', 'binary', 'byte', 'email', 'uri']) ajv.addFormat(format, true);
      return ajv;
    },
  });
  api.register({
    getPetById: (c: Context) => {
      const pet = pets.get(Number(c.request.params.petId));
      return pet ? [200, pet] : [404, { code: 404, type: 'error', message: 'Pet not found' }];
    },
    addPet: (c: Context) => {
      const body = c.request.requestBody as Pet;
      const pet = { ...body, id: body.id ?? nextId++ };
      pets.set(pet.id, pet);
      return [200, pet];
    },
    findPetsByStatus: (c: Context) => {
      const wanted = ([] as unknown[]).concat(c.request.query.status);
      return [200, [...pets.values()].filter((p) => wanted.includes(p.status))];
    },
    deletePet: (c: Context) => (pets.delete(Number(c.request.params.petId)) ? [200, {}] : [404, { message: 'Pet not found' }]),
    notImplemented: (c: Context) => {
      const { status, mock } = c.api.mockResponseForOperation(c.operation.operationId!);
      return [status, mock];
    },
    validationFail: (c: Context) => [400, { err: c.validation.errors!.map((e) => `${e.instancePath} ${e.message}`) }],
    notFound: () => [404, { err: 'not found' }],
  });
  // The document's security schemes accept anything: these tests are about the MCP side.
  api.registerSecurityHandler('api_key', () => true);
  api.registerSecurityHandler('petstore_auth', () => true);
  await api.init();
  const documents: Record<string, [string, string]> = {
    '/openapi.json': ['application/json', readFileSync(PETSTORE_JSON, 'utf8')],
    '/openapi.yaml': ['application/yaml', readFileSync(PETSTORE_YAML, 'utf8')],
  };
  const received: PetstoreRequest[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', async () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const u = new URL(req.url!, 'http://petstore');
      const doc = documents[u.pathname];
      if (doc && req.method === 'GET') {
        res.writeHead(200, { 'content-type': doc[0] });
        res.end(doc[1]);
        return;
      }
      let parsed: unknown;
      try {
        parsed = body ? JSON.parse(body) : undefined;
      } catch {
        parsed = body;
      }
      try {
        const [status, out] = (await api.handleRequest({
          method: req.method!,
          path: u.pathname,
          query: u.search.slice(1),
          body: parsed,
          headers: req.headers as Record<string, string | string[]>,
        })) as [number, unknown];
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out));
      } catch (err) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
