import backend from '../backends/backend/plugin.ts';
import apiKey from '../policies/api-key/plugin.ts';
import virtualKeys from '../policies/virtual-keys/plugin.ts';
import authorization from '../policies/authorization/plugin.ts';
import basicAuth from '../policies/basic-auth/plugin.ts';
import extAuthz from '../policies/ext-authz/plugin.ts';
import jwtAuth from '../policies/jwt-auth/plugin.ts';
import remoteRateLimit from '../policies/remote-rate-limit/plugin.ts';
import openapi from '../mcp-transports/openapi/plugin.ts';
import mcpBackend from '../backends/mcp/plugin.ts';
import mcpStdio from '../mcp-transports/stdio/plugin.ts';
import mcpSse from '../mcp-transports/sse/plugin.ts';
import mcpStreamable from '../mcp-transports/mcp/plugin.ts';
import mcpAuthentication from '../policies/mcp-authentication/plugin.ts';
import mcpAuthorization from '../policies/mcp-authorization/plugin.ts';
import backendAuth from '../policies/backend-auth/plugin.ts';
import passthrough from '../backend-auth/passthrough/plugin.ts';
import key from '../backend-auth/key/plugin.ts';
import gcp from '../backend-auth/gcp/plugin.ts';
import aws from '../backend-auth/aws/plugin.ts';
import azure from '../backend-auth/azure/plugin.ts';
import host from '../backends/host/plugin.ts';
import service from '../backends/service/plugin.ts';
import cloudBackend from '../backends/cloud-backend/plugin.ts';
import backendTls from '../policies/backend-tls/plugin.ts';
import cors from '../policies/cors/plugin.ts';
import directResponse from '../policies/direct-response/plugin.ts';
import localRateLimit from '../policies/local-rate-limit/plugin.ts';
import requestMirror from '../policies/request-mirror/plugin.ts';
import requestRedirect from '../policies/request-redirect/plugin.ts';
import requestHeaderModifier from '../policies/request-header-modifier/plugin.ts';
import responseHeaderModifier from '../policies/response-header-modifier/plugin.ts';
import retry from '../policies/retry/plugin.ts';
import outlierDetection from '../policies/outlier-detection/plugin.ts';
import healthCheck from '../policies/health-check/plugin.ts';
import timeout from '../policies/timeout/plugin.ts';
import transformations from '../policies/transformations/plugin.ts';
import urlRewrite from '../policies/url-rewrite/plugin.ts';
import a2a from '../policies/a2a/plugin.ts';
import aiBackend from '../backends/ai/plugin.ts';
import openAI from '../llm-providers/openai/plugin.ts';
import gemini from '../llm-providers/gemini/plugin.ts';
import anthropic from '../llm-providers/anthropic/plugin.ts';
import vertex from '../llm-providers/vertex/plugin.ts';
import bedrock from '../llm-providers/bedrock/plugin.ts';
import azureOpenAI from '../llm-providers/azure-openai/plugin.ts';
import ai from '../policies/ai/plugin.ts';
import regexGuard from '../guards/regex/plugin.ts';
import webhookGuard from '../guards/webhook/plugin.ts';
import openAIModeration from '../guards/openai-moderation/plugin.ts';
import bedrockGuardrails from '../guards/bedrock-guardrails/plugin.ts';
import googleModelArmor from '../guards/google-model-armor/plugin.ts';
import type { Plugin } from 'switchyard/sdk';

/** Every first-party plugin. Typed as a plain list so the published `.d.ts` need not name each plugin's config type. */
export const fullPreset: readonly Plugin[] = [
  host,
  service,
  cloudBackend,
  aiBackend,
  openAI,
  gemini,
  anthropic,
  vertex,
  bedrock,
  azureOpenAI,
  backend,
  mcpBackend,
  cors,
  mcpAuthentication,
  jwtAuth,
  basicAuth,
  apiKey,
  virtualKeys,
  extAuthz,
  authorization,
  mcpAuthorization,
  localRateLimit,
  remoteRateLimit,
  transformations,
  requestHeaderModifier,
  responseHeaderModifier,
  urlRewrite,
  requestRedirect,
  directResponse,
  requestMirror,
  a2a,
  ai,
  regexGuard,
  webhookGuard,
  openAIModeration,
  bedrockGuardrails,
  googleModelArmor,
  timeout,
  retry,
  outlierDetection,
  healthCheck,
  backendTls,
  backendAuth,
  passthrough,
  key,
  gcp,
  aws,
  azure,
  mcpStdio,
  mcpSse,
  mcpStreamable,
  openapi,
] as const;
export default fullPreset;
