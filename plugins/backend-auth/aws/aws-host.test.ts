import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopeFromHost } from './aws-host.ts';

describe('scopeFromHost', () => {
  const cases: [string, { service: string; region: string } | undefined][] = [
    ['bedrock-runtime.us-east-1.amazonaws.com', { service: 'bedrock', region: 'us-east-1' }],
    ['bedrock-agent-runtime.eu-central-1.amazonaws.com', { service: 'bedrock', region: 'eu-central-1' }],
    ['bedrock-runtime-fips.us-gov-west-1.amazonaws.com', { service: 'bedrock', region: 'us-gov-west-1' }],
    ['bedrock-agentcore.us-west-2.amazonaws.com', { service: 'bedrock-agentcore', region: 'us-west-2' }],
    ['bedrock-agentcore-control.us-west-2.amazonaws.com', { service: 'bedrock-agentcore', region: 'us-west-2' }],
    ['runtime.sagemaker.ap-southeast-2.amazonaws.com', { service: 'sagemaker', region: 'ap-southeast-2' }],
    ['my-bucket.s3.eu-west-1.amazonaws.com', { service: 's3', region: 'eu-west-1' }],
    ['s3.dualstack.eu-west-1.amazonaws.com', { service: 's3', region: 'eu-west-1' }],
    ['abc123.execute-api.us-east-2.amazonaws.com', { service: 'execute-api', region: 'us-east-2' }],
    ['xyz.lambda-url.us-east-1.on.aws', { service: 'lambda', region: 'us-east-1' }],
    ['email.us-east-1.amazonaws.com', { service: 'ses', region: 'us-east-1' }],
    ['sts.amazonaws.com', { service: 'sts', region: 'us-east-1' }],
    ['bedrock-runtime.cn-north-1.amazonaws.com.cn', { service: 'bedrock', region: 'cn-north-1' }],
    ['BEDROCK-RUNTIME.US-EAST-1.AMAZONAWS.COM.', { service: 'bedrock', region: 'us-east-1' }],
    ['example.com', undefined],
    ['127.0.0.1', undefined],
    ['amazonaws.com', undefined],
  ];
  for (const [host, want] of cases) {
    it(`${host} → ${want ? `${want.service}/${want.region}` : 'not AWS'}`, () => {
      assert.deepEqual(scopeFromHost(host), want);
    });
  }
});
