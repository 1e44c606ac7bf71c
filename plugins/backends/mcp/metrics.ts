import type { CompileContext, MetricHistogram } from 'switchyard/sdk';

/** OTel MCP semantic conventions' advisory buckets for operation durations (seconds). */
const OPERATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** The MCP backend's histograms on `/metrics` (shared by every MCP backend). */
export interface McpMetrics {
  /** OTel `mcp.client.operation.duration` for `tools/call`: the gateway sending it to a target until the answer. */
  readonly toolCall: MetricHistogram;
  /** A multiplexed list (`tools/list`...): sending it to every target until every answer (all pages) is in. */
  readonly listFanOut: MetricHistogram;
}

export function mcpMetrics(ctx: CompileContext): McpMetrics {
  return {
    toolCall: ctx.histogram(
      'mcp_client_operation_duration_seconds',
      'MCP tools/call sent to a target until its answer, by method, target, tool and error type (empty on success).',
      ['mcp_method_name', 'target', 'gen_ai_tool_name', 'error_type'],
      OPERATION_BUCKETS,
    ),
    listFanOut: ctx.histogram(
      'switchyard_mcp_list_fanout_duration_seconds',
      'A multiplexed MCP list sent to every target until every answer is in, by method.',
      ['mcp_method_name'],
      OPERATION_BUCKETS,
    ),
  };
}
