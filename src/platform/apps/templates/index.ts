/**
 * Bundled app templates (template/list, template/detail). Stored as modules so the compiled
 * build carries them without copying data files.
 */
import { chatNode, datasetSearch, edge, httpNode, userGuide, workflowStart } from './nodes.js';

export interface AppTemplate {
  id: string;
  name: string;
  intro: string;
  author: string;
  avatar: string;
  tags: string[];
  type: 'simple' | 'advanced' | 'plugin';
  weight?: number;
  workflow: { nodes: Record<string, unknown>[]; edges: Record<string, unknown>[]; chatConfig?: Record<string, unknown> };
}

export const APP_TEMPLATES: AppTemplate[] = [
  {
    id: 'simpleChat',
    name: 'Simple chat',
    intro: 'A plain assistant that answers with an AI model.',
    author: 'platform',
    avatar: '/imgs/app/avatar/simple.svg',
    tags: ['recommendation'],
    type: 'simple',
    weight: 10,
    workflow: {
      nodes: [userGuide('Hello! How can I help you today?'), workflowStart(), chatNode('chatNode', 'You are a helpful assistant.', 400)],
      edges: [edge('workflowStartNodeId', 'chatNode')],
      chatConfig: { welcomeText: 'Hello! How can I help you today?', variables: [], questionGuide: false },
    },
  },
  {
    id: 'knowledgeBaseChat',
    name: 'Knowledge base chat',
    intro: 'Searches the selected knowledge bases and answers from what it finds.',
    author: 'platform',
    avatar: '/imgs/app/avatar/simple.svg',
    tags: ['recommendation', 'office-services'],
    type: 'simple',
    weight: 9,
    workflow: {
      nodes: [
        userGuide('Ask me anything about your documents.'),
        workflowStart(),
        datasetSearch('datasetSearch', 400),
        chatNode('chatNode', 'Answer using the quoted knowledge. Say so when it does not contain the answer.', 900, ['datasetSearch', 'quoteQA']),
      ],
      edges: [edge('workflowStartNodeId', 'datasetSearch'), edge('datasetSearch', 'chatNode')],
      chatConfig: { welcomeText: 'Ask me anything about your documents.', variables: [] },
    },
  },
  {
    id: 'translatorWorkflow',
    name: 'Translator',
    intro: 'A workflow that translates the message into the language chosen in a variable.',
    author: 'platform',
    avatar: '/imgs/app/avatar/workflow.svg',
    tags: ['writing'],
    type: 'advanced',
    weight: 5,
    workflow: {
      nodes: [
        userGuide('Send me text and I will translate it.'),
        workflowStart(),
        chatNode('translate', 'Translate the user message into {{language}}. Reply with the translation only.', 400),
      ],
      edges: [edge('workflowStartNodeId', 'translate')],
      chatConfig: {
        welcomeText: 'Send me text and I will translate it.',
        variables: [{ id: 'language', key: 'language', label: 'Target language', type: 'select', required: true, maxLen: 50, enums: [{ value: 'English' }, { value: 'French' }, { value: 'German' }, { value: 'Spanish' }, { value: 'Chinese' }], valueType: 'string' }],
      },
    },
  },
  {
    id: 'httpToolWorkflow',
    name: 'HTTP tool',
    intro: 'A workflow that calls an HTTP API with the question and summarises the response.',
    author: 'platform',
    avatar: '/imgs/app/avatar/workflow.svg',
    tags: ['web-search'],
    type: 'advanced',
    weight: 4,
    workflow: {
      nodes: [
        userGuide('Ask a question; I will look it up through the configured API.'),
        workflowStart(),
        httpNode('httpRequest', 'https://api.example.com/search', 400),
        {
          ...chatNode('summarise', 'Summarise this API response for the user: {{response}}', 900),
        },
      ],
      edges: [edge('workflowStartNodeId', 'httpRequest'), edge('httpRequest', 'summarise')],
      chatConfig: { variables: [] },
    },
  },
];
