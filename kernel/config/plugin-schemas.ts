import { ErrorCode, pluginLabel } from '../sdk/index.ts';
import type { JsonSchema } from '../sdk/index.ts';
import { PluginRegistryError, describeSource } from '../registry/registry.ts';
import type { PluginRegistry } from '../registry/registry.ts';
import { pluginDefName } from './assemble-schema.ts';
import { ConfigValidator } from './validate-config.ts';

/**
 * Check each third-party plugin's part of the assembled schema on its own (ADR 0144), so that a schema that is not
 * valid JSON Schema, uses an unknown keyword or refers to a definition it lacks is refused at start with the plugin
 * and package named, rather than as a message about the whole document (or, compiled lazily, at the first config
 * that uses the key). First-party schemas are checked by the tests (schema-fresh.test.ts) and skipped.
 */
export function checkPluginSchemas(registry: PluginRegistry, schema: JsonSchema): void {
  const thirdParty = registry.plugins().filter(({ plugin, source }) => plugin.kind !== 'slot' && source.name !== 'switchyard');
  if (thirdParty.length === 0) return;
  const validator = new ConfigValidator(schema, [], { checkSchema: false, prune: false });
  for (const { plugin, source } of thirdParty) {
    if (plugin.kind === 'slot') continue;
    const problem = validator.definitionProblem(pluginDefName(pluginLabel(plugin), plugin.key));
    if (problem !== undefined) {
      throw new PluginRegistryError(ErrorCode.pluginInvalid, `plugin \`${plugin.key}\` from ${describeSource(source)} has an invalid schema: ${problem}`);
    }
  }
}
