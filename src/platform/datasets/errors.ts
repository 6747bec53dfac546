import { AppError } from '../../infra/errors.js';

/** Missing collection / data: the reference's dataset error keys, with an honest 404. */
export const collectionNotFound = (id: string) =>
  new AppError({ httpStatus: 404, code: 501002, statusText: 'unAuthDatasetCollection', message: `Collection ${id} not found` });

export const dataNotFound = (id: string) =>
  new AppError({ httpStatus: 404, code: 501003, statusText: 'unAuthDatasetData', message: `Data ${id} not found` });
