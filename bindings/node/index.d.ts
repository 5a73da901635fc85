// Types of the `switchboard` package (index.js), written by hand and checked by `tsc --noEmit`
// against a program that uses every part of them (test/types.ts).

/**
 * A configuration source, as `switchboard --mcp-config` takes it: a path to an `mcp.json`, the
 * same JSON as text, or as an object (`{ mcpServers: {...} }`, or the servers alone:
 * `{ name: { command: ... } }`).
 */
export type ConfigSource = string | URL | Record<string, unknown>;

/** What {@link Host.start} takes. */
export interface StartOptions {
  /**
   * The program's configuration sources, on top of the user's configuration of every scope
   * (user, project `.mcp.json`, local, managed).
   */
  config?: Iterable<ConfigSource>;
  /** The working directory whose project configuration is read (default: the process's); also the root offered to servers. */
  cwd?: string | URL;
  /** Variables the configuration reads (`${VAR}`, the configuration and state folders), over the process's own; `null` removes one. */
  env?: Record<string, string | null>;
  /** The program's `config` is the whole configuration: no user, project or managed file is read (nor their permission rules and hooks). */
  isolated?: boolean;
  /** Where the host keeps what it learns of servers, OAuth tokens and large results (default: the configuration's state folder). */
  stateDir?: string | URL;
  /** Tools allowed without asking, as an `allow` rule would (`mcp__<server>` for a whole server, `mcp__<server>__<tool>`, globs). */
  allow?: Iterable<string>;
  /** Tools denied, as a `deny` rule would: left out of the catalogue. */
  deny?: Iterable<string>;
  /** Start every server now, lazy ones included. */
  eager?: boolean;
  /**
   * Answers a server's questions to the user: an object of the form's fields (accept), `true`
   * (a URL opened), `null`/`'decline'`, or `'cancel'`. Without it they are declined; one that
   * throws declines.
   */
  onElicitation?: (request: ElicitationRequest) => ElicitationAnswer | Promise<ElicitationAnswer>;
  /**
   * Asked when no rule allows a call: `true` (this call), `'always'` (this tool, for the rest of
   * the host), `false` or `new Deny(reason)`. Without it such calls are denied: MCP tools need a
   * rule or an answer. One that throws denies.
   */
  onPermission?: (request: PermissionRequest) => PermissionAnswer | Promise<PermissionAnswer>;
  /**
   * Answers a server's `sampling/createMessage` with a text or a `CreateMessageResult` object;
   * one that throws fails the request with its message.
   */
  onSampling?: (request: SamplingRequest) => SamplingAnswer | Promise<SamplingAnswer>;
}

export type ElicitationAnswer = Record<string, unknown> | boolean | 'accept' | 'decline' | 'cancel' | null | undefined;
export type PermissionAnswer = boolean | 'once' | 'always' | 'deny' | Deny | null | undefined;
export type SamplingAnswer = string | Record<string, unknown>;

/**
 * Switchboard's MCP host: every server of the configuration connected in the background, one
 * catalogue of their tools, resources and prompts, and each request run through permissions,
 * time limits, progress, the servers' questions and the output budget.
 *
 * ```js
 * const host = await Host.start({ config: ['mcp.json'], allow: ['mcp__github'] });
 * await host.waitSettled(30);
 * for (const tool of await host.tools()) console.log(tool.name, tool.description);
 * const result = await host.call('mcp__github__list_issues', { repo: 'x/y' });
 * console.log(result.text);
 * await host.close();
 * ```
 *
 * One host keeps one session per server: every call to a server goes over the same
 * connection (a stdio server is one process), reconnected when it drops.
 */
export declare class Host {
  private constructor();
  /**
   * Starts a host; its servers connect in the background (see {@link Host.waitSettled}).
   * Callbacks run on the main thread, plain or async alike.
   *
   * @throws {StartError} A limit set in the environment is not valid, or an `allow` or `deny`
   * pattern is not one.
   */
  static start(options?: StartOptions): Promise<Host>;
  /** Problems found in the configuration files, one line each. */
  readonly configIssues: string[];
  /**
   * Waits until no server is still connecting, at most `timeout` seconds (default 30).
   *
   * @throws {HostError} A server marked `required` did not connect.
   */
  waitSettled(timeout?: number): Promise<Readiness>;
  /**
   * Every tool of every connected (or lazy) server, as the catalogue names them; problems found
   * on the way (tools left out, descriptions cut, failed listings) in `issues`.
   */
  tools(): Promise<Listing<Tool>>;
  /** The `limit` tools most relevant to `query` (BM25 over names, titles, descriptions and parameters), best first; lazy servers' tools too. */
  searchTools(query: string, limit?: number): Promise<SearchHit[]>;
  /**
   * Calls a tool by its qualified name (`mcp__<server>__<tool>`).
   *
   * A lazy or failed server is started (or reconnected) first; the arguments are checked
   * against the tool's input schema; permission rules, hooks and `onPermission` decide; then
   * the call runs with the tool timeout (`timeout` seconds overrides it) and its result goes
   * through the output budget. `onProgress` gets each notification, all before the call returns.
   *
   * @throws {CallError} The call did not succeed (`isDenied`, `isTimeout`, `needsAuth`,
   * `server` tell why). A tool that reports an error returns a result whose `isError` is true
   * instead.
   */
  call(name: string, args?: Record<string, unknown>, options?: CallOptions): Promise<CallResult>;
  /** The resources of every connected server (or of `server`); servers whose listing failed are in `failures`. */
  resources(server?: string | null): Promise<Listing<Resource>>;
  /**
   * Reads the resource `uri` of `server` (`resources/read`), through the output budget.
   *
   * @throws {HostError} No such server, not connected, or the server refused.
   */
  read(server: string, uri: string, options?: RequestOptions): Promise<ReadResult>;
  /** The prompts of every connected server (or of `server`); servers whose listing failed are in `failures`. */
  prompts(server?: string | null): Promise<Listing<Prompt>>;
  /**
   * Gets the prompt `name` (its qualified name, `mcp__<server>__<prompt>`) with these arguments.
   *
   * @throws {HostError} No such prompt or server, or the server refused.
   */
  prompt(name: string, args?: Record<string, string>, options?: RequestOptions): Promise<PromptResult>;
  /** Every configured server with its state, now. */
  servers(): Server[];
  /** The process id of a running stdio server (`null` when it is not running). */
  processId(server: string): number | null;
  /**
   * Reconnects a server (a stdio server's process is started again).
   *
   * @throws {HostError} No such server.
   */
  reconnect(server: string): void;
  /**
   * Enables or disables a server for this host (its tools come or go).
   *
   * @throws {HostError} No such server.
   */
  setEnabled(server: string, enabled: boolean): void;
  /**
   * An async iterator of what happens from now on: server states, reconnects, catalogue
   * changes, log messages. It ends when the host is closed.
   *
   * ```js
   * for await (const event of host.events()) {
   *   if (event.type === 'tools_changed') tools = await host.tools();
   * }
   * ```
   */
  events(): Events;
  /** Stops every server; every {@link Host.events} iterator ends. */
  close(): Promise<void>;
  /** `await using host = await Host.start(...)` closes it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>;
}

export interface CallOptions {
  /** Seconds; overrides the tool timeout. */
  timeout?: number;
  /** Each progress notification of the call, all before the call returns. */
  onProgress?: (progress: Progress) => void | Promise<void>;
}

export interface RequestOptions {
  /** Seconds. */
  timeout?: number;
}

/** The host's events from the moment {@link Host.events} was called; ends once the host is closed. */
export declare class Events implements AsyncIterableIterator<Event> {
  private constructor();
  [Symbol.asyncIterator](): this;
  next(): Promise<IteratorResult<Event, undefined>>;
  return(): Promise<IteratorResult<Event, undefined>>;
  /** The next event, waiting at most `timeout` seconds (`null` when none came in time, or the host is closed); none is lost. */
  nextEvent(timeout?: number): Promise<Event | null>;
}

/** A list of what the servers answered, with the servers that failed to answer in `failures`, and for the catalogue's tools what the user should know (tools left out, descriptions cut) in `issues`. */
export type Listing<T> = T[] & { failures: HostError[]; issues: string[] };

/** What {@link Host.waitSettled} saw: `settled` when no server is still connecting, else those that are in `pending`. */
export interface Readiness {
  settled: boolean;
  pending: string[];
}

/** What a tool's server says about it (hints, not guarantees). */
export interface Annotations {
  /** `readOnlyHint`: it changes nothing. */
  readOnly: boolean;
  /** `destructiveHint` (the protocol's default: true for a tool that is not read-only). */
  destructive: boolean;
  /** `idempotentHint`: calling it again with the same arguments does nothing more. */
  idempotent: boolean;
  /** `openWorldHint`: it reaches outside (the web, other systems). */
  openWorld: boolean;
}

/** A tool of the catalogue: `name` is what to call it by (`mcp__<server>__<tool>`, safe for model APIs as it is); `toolName` the name its server knows it by. */
export interface Tool {
  name: string;
  server: string | null;
  toolName: string;
  title: string | null;
  description: string | null;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown> | null;
  annotations: Annotations;
  icons: unknown[] | null;
  meta: Record<string, unknown> | null;
}

/** A tool found by {@link Host.searchTools}, with its relevance (BM25, comparable only within one search). */
export interface SearchHit {
  tool: Tool;
  score: number;
}

/**
 * A tool call's result, after the output budget. `isError` means the tool ran and reported an
 * error: the call itself worked (a call that did not throws {@link CallError}).
 */
export interface CallResult {
  /** The content blocks, as MCP JSON (`{ type: 'text', text }`, images, …). */
  content: Array<Record<string, unknown>>;
  /** `structuredContent`, checked against the tool's output schema. */
  structured: unknown;
  isError: boolean;
  /** The text blocks joined by newlines. */
  text: string;
  /** The whole `tools/call` result as MCP JSON. */
  raw: Record<string, unknown>;
  estimatedTokens: number;
  /** Files the output budget wrote (a large result saved, binaries). */
  files: string[];
  /** What the output budget did. */
  notes: string[];
}

/** A progress notification of a running call. */
export interface Progress {
  /** How far along (it only grows). */
  progress: number;
  /** Out of how much, when the server knows. */
  total: number | null;
  message: string | null;
}

/** A resource a server offers (`resources/list`). */
export interface Resource {
  server: string;
  uri: string;
  name: string | null;
  description: string | null;
  mimeType: string | null;
  raw: Record<string, unknown>;
}

/** A resource read, after the output budget. */
export interface ReadResult {
  /** The `contents` as MCP JSON (`uri`, `mimeType`, `text` or `blob`). */
  contents: Array<Record<string, unknown>>;
  /** The text contents joined by newlines. */
  text: string;
  raw: Record<string, unknown>;
  files: string[];
  notes: string[];
}

/** A prompt a server offers: `name` is its qualified name (what {@link Host.prompt} takes), `promptName` its server's name for it. */
export interface Prompt {
  name: string;
  server: string;
  promptName: string;
  description: string | null;
  arguments: Array<Record<string, unknown>>;
  raw: Record<string, unknown>;
}

/** A prompt's messages (`prompts/get`). */
export interface PromptResult {
  messages: Array<Record<string, unknown>>;
  description: string | null;
  raw: Record<string, unknown>;
}

/** A configured server and its state. */
export interface Server {
  name: string;
  /** `pending`, `connected`, `failed`, `needs-auth`, `disabled` or `lazy` (not running, started by the first request that needs it). */
  state: string;
  /** The process id of a running stdio server. */
  pid: number | null;
  /** Why it failed, or what to do for a login. */
  message: string | null;
  /** What a connected server said about itself: `name`, `title`, `version`, `protocolVersion`, `instructions`. */
  info: Record<string, unknown> | null;
  raw: Record<string, unknown>;
}

/**
 * Something that happened behind the host. `type` is one of:
 *
 * - `state`: a server's state changed (`state`; `data` has its details);
 * - `reconnecting`: a reconnect is scheduled (`data`: `attempt`, `delay` in seconds,
 *   `message`, why the server went);
 * - `tools_changed`: a server's tools changed in the catalogue (`data`: `added`, `removed`,
 *   `changed` qualified names); {@link Host.tools} lists the change by the time it arrives;
 * - `resources_changed`, `prompts_changed`, `resource_updated` (`data.uri`), `removed` (a
 *   reload removed the server);
 * - `log`: a server's log message (`data`: `level`, `logger`, `data`);
 * - `lagged`: this iterator was too slow and missed `data.missed` events.
 */
export interface Event {
  type: string;
  server: string | null;
  state: string | null;
  data: Record<string, any>;
}

/** A call waiting for permission (`onPermission`). */
export interface PermissionRequest {
  /** The qualified name, `mcp__<server>__<tool>`. */
  tool: string;
  server: string;
  /** The tool's name on its server. */
  name: string;
  arguments: Record<string, unknown>;
  readOnly: boolean;
  destructive: boolean;
}

/** A permission callback's refusal, with the reason the caller is told. */
export declare class Deny {
  constructor(reason?: string | null);
  reason: string | null;
}

/**
 * A server asks the user something (`onElicitation`). `mode` is `form` (fill in
 * `requestedSchema`: answer an object of its fields), `url` (open `url`: answer `true` once it
 * is) or `other` (`params` are the MCP params). `refused` says why the last answer was refused
 * (it did not match the schema) when the callback is asked again.
 */
export interface ElicitationRequest {
  server: string;
  tool: string | null;
  mode: 'form' | 'url' | 'other';
  message: string;
  requestedSchema?: Record<string, any>;
  url?: string;
  elicitationId?: string;
  refused: string | null;
  params?: Record<string, unknown>;
}

/** A server asks the program's model for a message (`onSampling`): `params` are the `sampling/createMessage` params (`messages`, `maxTokens`, `systemPrompt`…). */
export interface SamplingRequest {
  server: string;
  tool: string | null;
  params: Record<string, any>;
}

/**
 * Anything the host could not do. The message is the error and its causes on one line
 * (`error: cause: cause`).
 */
export declare class SwitchboardError extends Error {
  /** The server the request went to, when it got that far. */
  readonly server: string | null;
  /** The server did not answer in time (or did not connect in time). */
  readonly isTimeout: boolean;
  /** The server waits for a login (`switchboard mcp login NAME`). */
  readonly needsAuth: boolean;
  /** A permission rule, a hook or the permission callback refused the call. */
  readonly isDenied: boolean;
}

/**
 * A tool call that did not succeed: no such tool, invalid arguments, denied, the server was
 * not connected or did not answer in time, its output did not match its schema. A tool that
 * ran and reported an error is not one: that is a {@link CallResult} whose `isError` is true.
 */
export declare class CallError extends SwitchboardError {}

/** A request other than a call that did not succeed (a read, a prompt, a required server that did not connect in {@link Host.waitSettled}, an unknown server). */
export declare class HostError extends SwitchboardError {}

/** The host could not start: a limit set in the environment is not valid, or an `allow` or `deny` pattern is not one. */
export declare class StartError extends SwitchboardError {}
