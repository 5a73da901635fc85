// Types of `switchboard/ai` (ai.js), checked by `tsc --noEmit` (test/types.ts).
import type { Tool } from 'ai';
import type { CallResult, Host } from './index';

/**
 * The host's tools for the Vercel AI SDK, keyed by their qualified names (`mcp__<server>__<tool>`),
 * in the shape `generateText` and `streamText` take as `tools`:
 *
 * ```js
 * import { generateText, stepCountIs } from 'ai';
 * import { tools } from 'switchboard/ai';
 *
 * const result = await generateText({ model, tools: await tools(host), stopWhen: stepCountIs(5), prompt });
 * ```
 *
 * Each tool's `execute` is {@link Host.call} (one long-lived session per server behind every
 * tool) and answers its {@link CallResult}; `toModelOutput` gives the model its content (text,
 * images, files), or its text as an error when the tool reported one. A call that did not
 * succeed (denied, timed out) throws its `CallError`, which the SDK hands the model as the
 * tool's error.
 */
export declare function tools(host: Host): Promise<Record<string, SwitchboardTool>>;

/** A tool of {@link tools}: its input is the tool's arguments, its output the call's result. */
export type SwitchboardTool = Tool<Record<string, unknown>, CallResult>;

/** What a tool's `toModelOutput` answers (the SDK's `ToolResultOutput`). */
export type ModelOutput = Awaited<ReturnType<NonNullable<SwitchboardTool['toModelOutput']>>>;

/** A call's result as the AI SDK's output for the model (what each tool's `toModelOutput` answers). */
export declare function modelOutput(result: CallResult): ModelOutput;
