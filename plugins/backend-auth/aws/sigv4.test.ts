import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { verifySigV4 } from '../../../test/helpers/sigv4.ts';
import { createSigner, signRequest } from './sigv4.ts';
import vectors from './sigv4-test-vectors.json' with { type: 'json' };

const SUITE_DATE = new Date('2015-08-30T12:36:00Z');

interface Vector {
  name: string;
  method: string;
  path: string;
  headers: [string, string][];
  body: string;
  authorization: string;
  sessionToken?: string;
  canonicalRequest?: string;
  stringToSign?: string;
}

/** A vector's header lines as a request header map: lower-case names, repeated lines as arrays. */
function headerMap(lines: [string, string][]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of lines) {
    const key = name.toLowerCase();
    const prev = out[key];
    out[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

const { accessKeyId, secretAccessKey } = vectors.credentials;

describe('SigV4 signing against the AWS Signature Version 4 test suite', () => {
  for (const v of vectors.vectors as Vector[]) {
    it(`${v.name}: the gateway's signer produces the published Authorization header`, async () => {
      const signer = createSigner(() => Promise.resolve({ accessKeyId, secretAccessKey, sessionToken: v.sessionToken }), vectors.service);
      const body = v.body ? Buffer.from(v.body) : undefined;
      const signed = await signRequest(
        signer,
        { method: v.method, path: v.path, headers: headerMap(v.headers), body },
        // The suite predates x-amz-content-sha256; everything else is the production path.
        { service: vectors.service, region: vectors.region, signingDate: SUITE_DATE, contentSha256: false },
      );
      assert.equal(signed.authorization, v.authorization);
      assert.equal(signed['x-amz-date'], vectors.date);
      if (v.sessionToken) assert.equal(signed['x-amz-security-token'], v.sessionToken);
    });

    it(`${v.name}: the independent test verifier accepts the published signature`, () => {
      const check = verifySigV4({ method: v.method, url: v.path, headers: { ...headerMap(v.headers), authorization: v.authorization }, body: Buffer.from(v.body) }, secretAccessKey);
      assert.ok(check.ok, `${check.problem}\n${check.canonicalRequest}`);
      if (v.canonicalRequest) assert.equal(check.canonicalRequest, v.canonicalRequest);
      if (v.stringToSign) assert.equal(check.stringToSign, v.stringToSign);
    });
  }
});

describe('SigV4 signing as the gateway sends it', () => {
  const signer = createSigner(() => Promise.resolve({ accessKeyId, secretAccessKey }), 'bedrock');
  const scope = { service: 'bedrock', region: 'us-east-1' } as const;

  it('adds x-amz-content-sha256 with the body hash, signs it, and the result verifies independently', async () => {
    const body = Buffer.from('{"messages":[{"role":"user","content":[{"text":"hi"}]}]}');
    const headers = { host: 'bedrock-runtime.us-east-1.amazonaws.com', 'content-type': 'application/json', 'x-forwarded-for': '10.0.0.1' };
    const path = '/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse?b=2&a=1';
    const signed = await signRequest(signer, { method: 'POST', path, headers, body }, scope);
    assert.equal(signed['x-amz-content-sha256'], createHash('sha256').update(body).digest('hex'));
    assert.match(signed.authorization!, /SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date,/);
    const check = verifySigV4({ method: 'POST', url: path, headers: { ...headers, ...signed, 'x-forwarded-for': '10.0.0.2' }, body }, secretAccessKey);
    assert.ok(check.ok, check.problem);
    assert.equal(check.service, 'bedrock');
    // A changed body no longer matches.
    assert.equal(verifySigV4({ method: 'POST', url: path, headers: { ...headers, ...signed }, body: Buffer.from('{}') }, secretAccessKey).ok, false);
  });

  it('replaces client-sent signature headers instead of trusting them', async () => {
    const headers = { host: 'sts.amazonaws.com', authorization: 'Bearer client', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-amz-date': '20000101T000000Z' };
    const signed = await signRequest(signer, { method: 'GET', path: '/', headers, body: undefined }, { service: 'sts', region: 'us-east-1' });
    assert.equal(signed['x-amz-content-sha256'], createHash('sha256').update('').digest('hex'));
    assert.notEqual(signed['x-amz-date'], '20000101T000000Z');
    assert.ok(verifySigV4({ method: 'GET', url: '/', headers: { host: 'sts.amazonaws.com', ...signed }, body: Buffer.alloc(0) }, secretAccessKey).ok);
  });

  it('S3 signs the path as sent (no second encoding, no dot-segment removal)', async () => {
    const s3 = createSigner(() => Promise.resolve({ accessKeyId, secretAccessKey }), 's3');
    const headers = { host: 'bucket.s3.eu-west-1.amazonaws.com' };
    const path = '/photos/2024%20trip/../a%2Bb.jpg';
    const signed = await signRequest(s3, { method: 'GET', path, headers, body: undefined }, { service: 's3', region: 'eu-west-1' });
    const check = verifySigV4({ method: 'GET', url: path, headers: { ...headers, ...signed }, body: Buffer.alloc(0) }, secretAccessKey);
    assert.ok(check.ok, check.problem);
    assert.equal(check.canonicalRequest!.split('\n')[1], path);
  });

  it('fails without a Host header', async () => {
    await assert.rejects(signRequest(signer, { method: 'GET', path: '/', headers: {}, body: undefined }, scope), /no Host header/);
  });
});
