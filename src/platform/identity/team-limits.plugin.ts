import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createTeamCountersRepo } from './team-counters.repo.js';
import { createTeamLimits } from './team-limits.service.js';
import { createTeamPlansRepo, TEAM_PLAN_INDEXES } from './team-plans.repo.js';

/** `app.teamLimits`: plan limits from the per-team plan document over the PLAN_* defaults. */
export default fp(
  async function teamLimitsPlugin(app: FastifyInstance) {
    const plans = createTeamPlansRepo(app.mongo.db);
    app.decorate(
      'teamLimits',
      createTeamLimits({
        config: app.config,
        plans,
        counters: createTeamCountersRepo(app.mongo.db, () => new Date(app.identity.clock.now())),
        now: () => app.identity.clock.now(),
        onCounterError: (error) => app.log.warn({ err: error }, 'team vector counter not updated; it is corrected at its next check'),
      }),
    );
    app.startup.add('indexes: team plans', () => app.mongo.ensureIndexes(TEAM_PLAN_INDEXES));
  },
  { name: 'platform-team-limits', dependencies: ['platform-identity'] },
);
