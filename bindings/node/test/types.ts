// Checked by `tsc --noEmit` (scripts/test.sh), never run: a program that uses every part of the
// package's types as a TypeScript program would, so that index.d.ts and ai.d.ts stay whole.
// (`preserveSymlinks` in tsconfig.json: npm links ./bindings/node, and ai.d.ts imports the
// program's own `ai`.)
import { generateText, type ToolSet } from 'ai';
import {
  CallError,
  Deny,
  Host,
  HostError,
  StartError,
  SwitchboardError,
  type CallResult,
  type ElicitationRequest,
  type Event,
  type Listing,
  type PermissionRequest,
  type Progress,
  type SamplingRequest,
  type Tool,
} from 'switchboard';
import { modelOutput, tools, type ModelOutput } from 'switchboard/ai';

export async function everything(model: Parameters<typeof generateText>[0]['model']): Promise<void> {
  await using host = await Host.start({
    config: ['mcp.json', { kit: { command: 'testkit-server' } }, new URL('file:///etc/mcp.json')],
    cwd: '.',
    env: { HOME: '/tmp', UNSET: null },
    isolated: true,
    stateDir: '/tmp/state',
    allow: ['mcp__kit'],
    deny: [],
    eager: false,
    onElicitation: async (request: ElicitationRequest) =>
      request.mode === 'form' ? { name: 'Ada', schema: request.requestedSchema } : request.mode === 'url' || null,
    onPermission: (request: PermissionRequest) => (request.readOnly ? 'always' : new Deny(`${request.tool} changes things`)),
    onSampling: (request: SamplingRequest) => `asked by ${request.server} with ${request.params.messages.length} messages`,
  });
  const issues: string[] = host.configIssues;
  const readiness = await host.waitSettled(30);
  const pending: string[] = readiness.settled ? [] : readiness.pending;
  const listed: Listing<Tool> = await host.tools();
  const first: Tool | undefined = listed[0];
  const readOnly: boolean | undefined = first?.annotations.readOnly;
  const failures: HostError[] = listed.failures;
  const hits = await host.searchTools('add', 3);
  const score: number | undefined = hits[0]?.score;
  const seen: Progress[] = [];
  const result: CallResult = await host.call('mcp__kit__add', { a: 1, b: 2 }, { timeout: 5, onProgress: (p) => void seen.push(p) });
  const text: string = result.text;
  const failed: boolean = result.isError;
  const resources = await host.resources();
  const read = await host.read('kit', resources[0]?.uri ?? 'test://readme', { timeout: 5 });
  const prompts = await host.prompts('kit');
  const got = await host.prompt(prompts[0]?.name ?? 'mcp__kit__paint', { color: 'red' });
  const state: string | undefined = host.servers()[0]?.state;
  const pid: number | null = host.processId('kit');
  host.reconnect('kit');
  host.setEnabled('kit', true);
  for await (const event of host.events()) {
    const kind: string = event.type;
    if (kind === 'tools_changed') break;
  }
  const next: Event | null = await host.events().nextEvent(1);
  try {
    await host.call('mcp__kit__slow', {}, { timeout: 0.1 });
  } catch (error) {
    if (error instanceof CallError) {
      const why: [string | null, boolean, boolean, boolean] = [error.server, error.isTimeout, error.needsAuth, error.isDenied];
      void why;
    }
    const typed: boolean = error instanceof SwitchboardError || error instanceof StartError;
    void typed;
  }

  const toolSet: ToolSet = await tools(host);
  const output: ModelOutput = modelOutput(result);
  const answer = await generateText({ model, tools: toolSet, prompt: 'add 1 and 2' });
  void [issues, pending, readOnly, failures, score, text, failed, read.text, got.messages, state, pid, next, output, answer.text];
  await host.close();
}
