// Validation of Kubernetes objects against the API schemas, twice over: the `kubernetes-models` validators (types,
// required fields, formats of the Kubernetes OpenAPI schema) and a TypeScript excess-property check against the
// same package's interfaces, which catches misspelt or misplaced fields that the OpenAPI schema lets through (as
// `kubectl apply --validate=strict` would).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** apiVersion/kind -> the module and class of its model. Every kind the chart and manifests may produce. */
const MODELS: Record<string, { module: string; type: string }> = {
  'v1/ConfigMap': { module: 'kubernetes-models/v1/ConfigMap', type: 'ConfigMap' },
  'v1/Secret': { module: 'kubernetes-models/v1/Secret', type: 'Secret' },
  'v1/Service': { module: 'kubernetes-models/v1/Service', type: 'Service' },
  'v1/ServiceAccount': { module: 'kubernetes-models/v1/ServiceAccount', type: 'ServiceAccount' },
  'apps/v1/Deployment': { module: 'kubernetes-models/apps/v1/Deployment', type: 'Deployment' },
  'policy/v1/PodDisruptionBudget': { module: 'kubernetes-models/policy/v1/PodDisruptionBudget', type: 'PodDisruptionBudget' },
  'autoscaling/v2/HorizontalPodAutoscaler': { module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', type: 'HorizontalPodAutoscaler' },
  'monitoring.coreos.com/v1/ServiceMonitor': { module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', type: 'ServiceMonitor' },
};

function modelOf(obj: KubeObject): { module: string; type: string } {
  const model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  if (!model) throw new Error(`no schema known for ${obj.apiVersion} ${obj.kind} (${obj.metadata?.name ?? 'unnamed'})`);
  return model;
}

/** Problems found by the runtime validators, one line per object that fails. */
export async function validateWithModels(objects: readonly KubeObject[]): Promise<string[]> {
  const problems: string[] = [];
  for (const obj of objects) {
    const { module, type } = modelOf(obj);
    const Model = (await import(module))[type] as new (data: unknown) => { validate(): void };
    try {
      new Model(obj).validate();
    } catch (err) {
      problems.push(`${obj.kind} ${obj.metadata?.name ?? ''}: ${(err as Error).message}`);
    }
  }
  return problems;
}

/**
 * Fields the API does not know: each object is written as a typed object literal and `tsc --noEmit` reports excess
 * properties. The scratch folder sits inside the repository (`.tmp/`, ignored by git) so `kubernetes-models`
 * resolves from its node_modules.
 */
export function unknownFields(objects: readonly KubeObject[], root: string): string[] {
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(root, '.tmp', 'k8s-types-'));
  try {
    const lines: string[] = [];
    objects.forEach((obj, i) => {
      const { module, type } = modelOf(obj);
      lines.push(`import type { I${type} as T${i} } from '${module}';`);
      lines.push(`export const o${i}: T${i} = ${JSON.stringify(obj, null, 1)};`);
    });
    writeFileSync(join(dir, 'objects.ts'), lines.join('\n') + '\n');
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2024', skipLibCheck: true, types: [] }, files: ['objects.ts'] }),
    );
    const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8', timeout: 60_000 });
    if (tsc.status === 0) return [];
    return (tsc.stdout + tsc.stderr).split('\n').filter((l) => l.includes('error TS'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
