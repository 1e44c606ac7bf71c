// The plain Kubernetes manifests (deploy/kubernetes/) and the Helm chart (deploy/helm/switchyard/): every object is
// valid against the Kubernetes API schemas, the gateway config they carry passes `switchyard --validate-only`, and
// the settings a production rollout depends on hold (probes on the readiness port, grace period above the drain,
// non-root read-only pods, a ConfigMap mounted so that hot reload sees updates).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir} from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { parseDuration } from '../../kernel/sdk/duration.ts';
import { unknownFields, validateWithModels } from './kubernetes-schemas.ts';
import type { KubeObject } from './kubernetes-schemas.ts';
import { which } from '../helpers/which.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MANIFESTS = join(ROOT, 'deploy/kubernetes');
const CHART = join(ROOT, 'deploy/helm/switchyard');
const scratch = testTempDir('switchyard-k8s-');
after(() => rmSync(scratch, { recursive: true, force: true }));

function validateOnly(configText: string, name: string): { code: number | null; output: string } {
  const file = join(scratch, name);
  writeFileSync(file, configText);
  const run = spawnSync(process.execPath, [join(ROOT, 'bin/switchyard.js'), '--validate-only', '-f', file], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return { code: run.status, output: run.stdout + run.stderr };
}

function byKind(objects: readonly KubeObject[], kind: string): KubeObject[] {
  return objects.filter((o) => o.kind === kind);
}

interface Probe {
  httpGet?: { path: string; port: string | number };
  timeoutSeconds?: number;
  periodSeconds?: number;
  failureThreshold?: number;
}
interface Container {
  name: string;
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
  volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  env?: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { secretRef?: { name: string } }[];
  args?: string[];
}
interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean };
  terminationGracePeriodSeconds?: number;
  volumes?: { name: string; configMap?: { name: string } }[];
}

/** The production properties both the plain manifests and the chart must have; returns the gateway config text. */
function checkDeployment(objects: readonly KubeObject[]): string {
  const [deployment] = byKind(objects, 'Deployment');
  assert.ok(deployment, 'a Deployment');
  const pod = (deployment.spec as { template: { spec: PodSpec } }).template.spec;
  const [gateway] = pod.containers;
  assert.equal(pod.securityContext?.runAsNonRoot, true, 'pod runs as non-root');
  assert.equal(gateway.securityContext?.readOnlyRootFilesystem, true, 'read-only root filesystem');
  assert.equal(gateway.securityContext?.allowPrivilegeEscalation, false);

  const configMount = gateway.volumeMounts?.find((m) => m.mountPath === '/etc/switchyard');
  assert.ok(configMount, 'config mounted at /etc/switchyard');
  assert.equal(configMount.subPath, undefined, 'a subPath mount would never see ConfigMap updates');
  const volume = pod.volumes?.find((v) => v.name === configMount.name);
  const [configMap] = byKind(objects, 'ConfigMap').filter((c) => c.metadata?.name === volume?.configMap?.name);
  assert.ok(configMap, 'the mounted ConfigMap is part of the objects');
  const configText = (configMap.data as Record<string, string>)['config.yaml'];
  assert.ok(configText, 'the ConfigMap holds config.yaml');
  assert.deepEqual(gateway.args, ['-f', '/etc/switchyard/config.yaml']);

  // Probes reach the readiness server the config declares.
  const staticConfig = (parse(configText) as { config: Record<string, string> }).config;
  const readinessPort = Number(staticConfig.readinessAddr.split(':').pop());
  const named = new Map(gateway.ports?.map((p) => [p.name, p.containerPort]));
  // Liveness asks only whether the process answers (ADR 0197): a pod not ready (a port that never frees) is taken
  // out of its Service, and a restart would not free the port.
  assert.equal(gateway.readinessProbe?.httpGet?.path, '/healthz/ready');
  assert.equal(gateway.livenessProbe?.httpGet?.path, '/healthz/live');
  for (const probe of [gateway.readinessProbe, gateway.livenessProbe]) {
    assert.ok(probe?.httpGet);
    const port = probe.httpGet.port;
    assert.equal(typeof port === 'string' ? named.get(port) : port, readinessPort, 'probe on the readiness port');
  }
  // The kubelet's default 1 s timeout leaves no margin for a pod at its CPU limit (ADR 0194); a timeout longer than
  // the period would overlap probes.
  for (const probe of [gateway.readinessProbe!, gateway.livenessProbe!]) {
    assert.ok(probe.timeoutSeconds !== undefined && probe.timeoutSeconds >= 2, 'timeoutSeconds set, above the 1 s default');
    assert.ok(probe.timeoutSeconds < (probe.periodSeconds ?? 10), 'timeoutSeconds below periodSeconds');
  }
  // A pod that is only not ready (a bind pending, a worker restarting) is not restarted before readiness notices.
  const window = (p: Probe) => (p.periodSeconds ?? 10) * (p.failureThreshold ?? 3);
  assert.ok(window(gateway.livenessProbe!) > window(gateway.readinessProbe!), 'liveness gives up after readiness');
  assert.match(staticConfig.readinessAddr, /^0\.0\.0\.0:/, 'readiness reachable by the kubelet');
  assert.match(staticConfig.adminAddr, /^127\.0\.0\.1:/, 'admin stays on loopback');

  // SIGTERM arrives after preStop; the drain must end before the kubelet's SIGKILL.
  const drainMs = parseDuration(staticConfig.drainTimeout ?? '10s') ?? 10_000;
  const preStop = gateway.lifecycle?.preStop?.exec?.command;
  const preStopMs = preStop?.[0] === 'sleep' ? Number(preStop[1]) * 1000 : 0;
  assert.ok(pod.terminationGracePeriodSeconds !== undefined);
  assert.ok(
    pod.terminationGracePeriodSeconds * 1000 > drainMs + preStopMs,
    `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds}s must exceed preStop ${preStopMs}ms + drain ${drainMs}ms`,
  );
  return configText;
}

async function assertValidObjects(objects: readonly KubeObject[]): Promise<void> {
  assert.deepEqual(await validateWithModels(objects), [], 'objects valid against the Kubernetes API schemas');
  assert.deepEqual(unknownFields(objects, ROOT), [], 'no fields the Kubernetes API does not know');
}

describe('deploy/kubernetes (plain manifests)', () => {
  const kustomization = parse(readFileSync(join(MANIFESTS, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  const files = readdirSync(MANIFESTS).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
  const objects = files.flatMap((f) =>
    parseAllDocuments(readFileSync(join(MANIFESTS, f), 'utf8')).map((d) => d.toJS() as KubeObject),
  );

  it('kustomization.yaml lists files that exist', () => {
    for (const r of kustomization.resources) assert.ok(existsSync(join(MANIFESTS, r)), `${r} exists`);
  });

  it('every manifest is valid against the Kubernetes API schemas', async () => {
    assert.ok(objects.length >= 7);
    await assertValidObjects(objects);
  });

  it('the Deployment is production-shaped and its ConfigMap passes --validate-only', () => {
    const configText = checkDeployment(objects);
    const result = validateOnly(configText, 'manifests-config.yaml');
    assert.equal(result.code, 0, result.output);
  });

  // docs/deploy.md tells users to build `switchyard:<version>`: the manifests and the chart's default image must be
  // that tag, or a cluster asks for an image nobody built (ADR 0146).
  it("the image is switchyard:<package version>, as the chart's appVersion", () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const [deployment] = byKind(objects, 'Deployment');
    const containers = (deployment.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers;
    assert.equal(containers[0]!.image, `switchyard:${version}`);
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { version: string; appVersion: string };
    assert.equal(chart.appVersion, version);
    const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { image: { repository: string; tag: string } };
    assert.deepEqual([values.image.repository, values.image.tag], ['switchyard', ''], 'the tag defaults to appVersion');
    assert.ok(readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8').includes(`docker build -t switchyard:${version} .`), 'docs/deploy.md builds the tag the manifests run');
  });

  it('the Service targets the Deployment pods and named container ports', () => {
    const [service] = byKind(objects, 'Service');
    const [deployment] = byKind(objects, 'Deployment');
    const labels = (deployment.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
    for (const [k, v] of Object.entries((service.spec as { selector: Record<string, string> }).selector)) assert.equal(labels[k], v);
    const ports = (deployment.spec as { template: { spec: PodSpec } }).template.spec.containers[0].ports?.map((p) => p.name);
    for (const p of (service.spec as { ports: { targetPort: string }[] }).ports) assert.ok(ports?.includes(p.targetPort), p.targetPort);
  });
});

/** `helm` on PATH or where `go install` puts it (.ci/run installs it from the Go module proxy). */
const helm = which('helm', [join(process.env.GOPATH ?? join(homedir(), 'go'), 'bin')]);
const helmSkip = helm ? false : 'helm is not installed (.ci/run installs it: go install helm.sh/helm/v3/cmd/helm)';
if (helmSkip) console.log(`# Helm chart rendering skipped: ${helmSkip}`);

function render(values: Record<string, unknown> = {}): KubeObject[] {
  const valuesFile = join(scratch, `values-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(valuesFile, JSON.stringify(values));
  const run = spawnSync(helm!, ['template', 'gw', CHART, '--namespace', 'agents', '-f', valuesFile], {
    encoding: 'utf8',
    timeout: 60_000,
    // helm keeps caches under HOME/XDG: keep them in the scratch folder.
    env: { ...process.env, HELM_CACHE_HOME: join(scratch, 'helm-cache'), HELM_CONFIG_HOME: join(scratch, 'helm-config'), HELM_DATA_HOME: join(scratch, 'helm-data') },
  });
  assert.equal(run.status, 0, `helm template failed:\n${run.stderr}`);
  return parseAllDocuments(run.stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

describe('deploy/helm/switchyard (chart)', { skip: helmSkip }, () => {
  it('helm lint passes', () => {
    const run = spawnSync(helm!, ['lint', '--strict', CHART], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HELM_CACHE_HOME: join(scratch, 'helm-cache'), HELM_CONFIG_HOME: join(scratch, 'helm-config') } });
    assert.equal(run.status, 0, run.stdout + run.stderr);
  });

  it('renders with default values: valid objects, a production-shaped Deployment, a config that validates', async () => {
    const objects = render();
    assert.deepEqual(objects.map((o) => o.kind).sort(), ['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
    await assertValidObjects(objects);
    const configText = checkDeployment(objects);
    const result = validateOnly(configText, 'chart-default.yaml');
    assert.equal(result.code, 0, result.output);
    const [deployment] = byKind(objects, 'Deployment');
    assert.equal((deployment.spec as { replicas: number }).replicas, 2);
  });

  it('renders every option: HPA, ServiceMonitor, secrets for the session key and credentials, a custom config', async () => {
    const objects = render({
      autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 7 },
      serviceMonitor: { enabled: true, labels: { release: 'prom' } },
      sessionKey: { existingSecret: 'gw-session', key: 'k' },
      envFromSecrets: ['llm-keys'],
      extraEnv: [{ name: 'LOG_HINT', value: 'x' }],
      rollOnConfigChange: true,
      drainSeconds: 40,
      ports: { binds: [{ name: 'mcp', containerPort: 9000, servicePort: 9000 }] },
      config: {
        binds: [
          {
            port: 9000,
            listeners: [{ routes: [{ name: 'llm', policies: { requestHeaderModifier: { set: { authorization: 'Bearer ${OPENAI_API_KEY:-unset}' } } }, backends: [{ host: 'api.internal:8080' }] }] }],
          },
        ],
      },
    });
    await assertValidObjects(objects);
    const configText = checkDeployment(objects);
    const result = validateOnly(configText, 'chart-options.yaml');
    assert.equal(result.code, 0, result.output);
    assert.equal((parse(configText) as { config: { drainTimeout: string } }).config.drainTimeout, '40s');

    const [deployment] = byKind(objects, 'Deployment');
    assert.equal((deployment.spec as { replicas?: number }).replicas, undefined, 'replicas left to the HPA');
    const template = (deployment.spec as { template: { metadata: { annotations: Record<string, string> }; spec: PodSpec } }).template;
    assert.match(template.metadata.annotations['checksum/config'], /^[0-9a-f]{64}$/);
    const container = template.spec.containers[0];
    assert.deepEqual(container.env?.find((e) => e.name === 'SESSION_KEY')?.valueFrom?.secretKeyRef, { name: 'gw-session', key: 'k' });
    assert.deepEqual(container.envFrom, [{ secretRef: { name: 'llm-keys' } }]);
    assert.equal(container.ports?.[0].containerPort, 9000);

    const [hpa] = byKind(objects, 'HorizontalPodAutoscaler');
    assert.deepEqual([(hpa.spec as { minReplicas: number }).minReplicas, (hpa.spec as { maxReplicas: number }).maxReplicas], [3, 7]);
    const [monitor] = byKind(objects, 'ServiceMonitor');
    assert.equal((monitor.metadata as { labels: Record<string, string> }).labels.release, 'prom');
    const [service] = byKind(objects, 'Service');
    const servicePorts = (service.spec as { ports: { name: string }[] }).ports.map((p) => p.name);
    assert.deepEqual(servicePorts, ['mcp', 'metrics']);
    assert.ok(
      ((monitor.spec as { endpoints: { port: string }[] }).endpoints ?? []).every((e) => servicePorts.includes(e.port)),
      'the ServiceMonitor scrapes a port the Service has',
    );
  });

  it('a config that the gateway rejects is caught by validating the rendered ConfigMap', () => {
    const objects = render({ config: { binds: [{ port: 8080, listeners: [{ routes: [{ name: 'x', policies: { jwtAuht: {} } }] }] }] } });
    const [configMap] = byKind(objects, 'ConfigMap');
    const result = validateOnly((configMap.data as Record<string, string>)['config.yaml'], 'chart-bad.yaml');
    assert.equal(result.code, 1);
    assert.match(result.output, /jwtAuht/);
    assert.match(result.output, /did you mean `jwtAuth`/);
  });
});
