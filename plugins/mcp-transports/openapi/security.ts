import type { CredentialLocation } from 'switchyard/sdk';
import { isObject } from './document.ts';
import type { JsonObject, OpenApiDocument } from './document.ts';
import type { RefResolver } from './refs.ts';

/** `Authorization: Bearer <key>`, what a key without a location sends anyway: no hint needed. */
const DEFAULT = JSON.stringify({ header: { name: 'authorization' } });

/** Where one security scheme takes its credential; undefined when a static key cannot be placed by it. */
function schemeLocation(scheme: unknown): CredentialLocation | undefined {
  if (!isObject(scheme)) return undefined;
  if (scheme.type === 'apiKey' && typeof scheme.name === 'string' && scheme.name !== '') {
    const name = scheme.name;
    // An API key in `Authorization` is the whole value, no scheme word before it.
    if (scheme.in === 'header') return name.toLowerCase() === 'authorization' ? { header: { name: 'authorization', prefix: '' } } : { header: { name } };
    if (scheme.in === 'query') return { queryParameter: { name } };
    if (scheme.in === 'cookie') return { cookie: { name } };
    return undefined;
  }
  const http = scheme.type === 'http' && typeof scheme.scheme === 'string' ? scheme.scheme.toLowerCase() : undefined;
  if (http === 'basic') return { header: { name: 'authorization', prefix: 'Basic ' } };
  if (http === 'bearer' || scheme.type === 'oauth2' || scheme.type === 'openIdConnect') return { header: { name: 'authorization' } };
  return undefined;
}

/**
 * Where the operation's `security` (else the document's) puts a static credential, when that is unambiguous: every
 * alternative that needs a credential names one scheme, and all of them put it in the same place. Undefined (the
 * key goes to `Authorization` as always) when there is no requirement, when one needs two schemes at once (one key
 * cannot be both), when alternatives disagree, or when a scheme is mutual TLS or unknown. A scheme given as a
 * `$ref` is followed as other `$ref`s outside schemas are (local only, at most MAX_REF_CHAIN links).
 */
export function credentialLocation(doc: OpenApiDocument, op: JsonObject, refs: RefResolver): CredentialLocation | undefined {
  const security = op.security ?? doc.security;
  if (!Array.isArray(security)) return undefined;
  const schemes = isObject(doc.components) && isObject(doc.components.securitySchemes) ? doc.components.securitySchemes : {};
  let found: CredentialLocation | undefined;
  let seen: string | undefined;
  for (const requirement of security) {
    if (!isObject(requirement)) return undefined;
    const names = Object.keys(requirement);
    if (names.length === 0) continue; // anonymous access is one alternative
    if (names.length > 1 || !Object.hasOwn(schemes, names[0]!)) return undefined;
    const location = schemeLocation(refs.deref(schemes[names[0]!]));
    if (location === undefined) return undefined;
    const text = JSON.stringify(location);
    if (seen !== undefined && seen !== text) return undefined;
    seen = text;
    found = location;
  }
  return seen === DEFAULT ? undefined : found;
}

/** `credentialLocation` as a spread for the operation's plan (nothing when there is none). */
export function credentialLocationOf(doc: OpenApiDocument, op: JsonObject, refs: RefResolver): { credentialLocation?: CredentialLocation } {
  const location = credentialLocation(doc, op, refs);
  return location === undefined ? {} : { credentialLocation: location };
}
