/** Where a request is signed for: the SigV4 credential scope's service and region. */
export interface SigningScope {
  readonly service: string;
  readonly region: string;
}

const AWS_SUFFIX = /\.(?:amazonaws\.com(?:\.cn)?|api\.aws|on\.aws)$/;
// us-east-1, eu-central-2, us-gov-west-1, cn-northwest-1, us-isob-east-1, ap-southeast-5, ...
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d+$/;
/** Endpoint prefixes whose signing name differs from the prefix. */
const SIGNING_NAME: Record<string, string> = {
  'bedrock-runtime': 'bedrock',
  'bedrock-agent': 'bedrock',
  'bedrock-agent-runtime': 'bedrock',
  'bedrock-data-automation': 'bedrock',
  'bedrock-data-automation-runtime': 'bedrock',
  'bedrock-agentcore-control': 'bedrock-agentcore',
  'lambda-url': 'lambda',
  email: 'ses',
};
/** Labels that sit between the service and the region without naming either. */
const NOISE = new Set(['dualstack', 'fips']);

/**
 * The signing service and region of an AWS endpoint host name, or undefined when it is not one:
 * `bedrock-runtime.us-east-1.amazonaws.com` -> bedrock/us-east-1, `bucket.s3.eu-west-1.amazonaws.com` -> s3/eu-west-1,
 * `sts.amazonaws.com` -> sts/us-east-1 (global endpoints sign for us-east-1).
 */
export function scopeFromHost(hostname: string): SigningScope | undefined {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  const suffix = AWS_SUFFIX.exec(host);
  if (!suffix) return undefined;
  const labels = host.slice(0, suffix.index).split('.').filter((l) => l.length > 0 && !NOISE.has(l));
  if (labels.length === 0) return undefined;
  const regionAt = labels.findIndex((l) => REGION.test(l));
  let region: string;
  let prefix: string | undefined;
  if (regionAt === -1) {
    region = suffix[0] === '.amazonaws.com.cn' ? 'cn-north-1' : 'us-east-1';
    prefix = labels[labels.length - 1];
  } else {
    region = labels[regionAt]!;
    prefix = labels[regionAt - 1];
  }
  if (!prefix) return undefined;
  prefix = prefix.replace(/-fips$/, '');
  return { service: SIGNING_NAME[prefix] ?? prefix, region };
}
