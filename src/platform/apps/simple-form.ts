/**
 * A simple app may be created, updated or published with its form (model, prompt, knowledge
 * bases, tools) instead of nodes: the server then builds the nodes as the reference's editor
 * does (src/domain/workflow/simple-app.ts). Nodes sent along always win.
 */
import { formOf, type SimpleAppForm, simpleFormToWorkflow } from '../../domain/workflow/simple-app.js';
import { Errors } from '../../infra/errors.js';
import { nanoid } from '../../infra/random-string.js';

/** The editor's node ids: a letter, then letters and digits. */
const nodeId = () => nanoid(6);

/** The workflow of a form in the body, when there is one; a form for another app type is refused. */
export function simpleWorkflowOf(type: string, body: Partial<SimpleAppForm>) {
  const form = formOf(body);
  if (!form) return undefined;
  if (type !== 'simple') throw Errors.invalidAppType(`Invalid field 'aiSettings': a form describes a simple app, not a ${type} app`);
  const built = simpleFormToWorkflow(form, nodeId);
  return { nodes: built.nodes as unknown as Record<string, unknown>[], edges: built.edges as unknown as Record<string, unknown>[] };
}
