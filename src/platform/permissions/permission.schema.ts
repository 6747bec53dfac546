import { z } from 'zod';

/** A permission as replies carry it (see domain/permission `makePermission`); open to added flags. */
export const permissionResponse = z.looseObject({
  value: z.number().int(),
  isOwner: z.boolean(),
  hasManagePer: z.boolean(),
  hasWritePer: z.boolean(),
  hasReadPer: z.boolean(),
});
