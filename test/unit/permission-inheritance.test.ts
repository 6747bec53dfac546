import { describe, expect, it } from 'vitest';
import { type PermissionResource, resolvePermission } from '../../src/domain/permission.js';
import {
  allDescendants,
  changeCollaborators,
  changeDefaultPermission,
  copiedRows,
  type InheritanceWrite,
  inheritingFolderDescendants,
  initialPermissions,
  managersLostByResume,
  move,
  type ParentPermissions,
  resumeInheritance,
} from '../../src/domain/permission-inheritance.js';

/** A tiny in-memory store that applies the writes the domain returns, as a repository would. */
class Store {
  resources = new Map<string, PermissionResource>();
  rows = new Map<string, Map<string, number>>();

  add(id: string, parentId: string | null, isFolder: boolean, over: Partial<PermissionResource> = {}, rows: Record<string, number> = {}) {
    this.resources.set(id, { id, parentId, isFolder, inheritPermission: true, defaultPermission: 0, ownerTmbId: 'owner', ...over });
    this.rows.set(id, new Map(Object.entries(rows)));
    return this;
  }
  get(id: string) {
    return this.resources.get(id) as PermissionResource;
  }
  tree() {
    return [...this.resources.values()];
  }
  collaborators(id: string) {
    return [...(this.rows.get(id) ?? new Map())].map(([tmbId, permission]) => ({ tmbId, permission })).sort((a, b) => a.tmbId.localeCompare(b.tmbId));
  }
  parentOf(id: string): ParentPermissions | null {
    const parentId = this.get(id).parentId;
    return parentId ? this.asParent(parentId) : null;
  }
  asParent(id: string): ParentPermissions {
    return { id, defaultPermission: this.get(id).defaultPermission, collaborators: this.collaborators(id), ownerTmbId: this.get(id).ownerTmbId };
  }
  apply(writes: InheritanceWrite[]) {
    for (const w of writes) {
      if (w.kind === 'replaceCollaborators') for (const id of w.resourceIds) this.rows.set(id, new Map(w.collaborators.map((c) => [c.tmbId, c.permission])));
      if (w.kind === 'upsertCollaborators') for (const c of w.collaborators) this.rows.get(w.resourceId)?.set(c.tmbId, c.permission);
      if (w.kind === 'removeCollaborators') for (const t of w.tmbIds) this.rows.get(w.resourceId)?.delete(t);
      if (w.kind === 'setDefaultPermission') for (const id of w.resourceIds) this.get(id).defaultPermission = w.defaultPermission;
      if (w.kind === 'updateResource') Object.assign(this.get(w.resourceId), w.set);
    }
  }
  /** The effective permission value of a member. */
  value(tmbId: string, id: string) {
    const r = this.get(id);
    const parent = r.parentId ? this.get(r.parentId) : null;
    return resolvePermission(r, parent, { tmbId, isTeamOwner: false, isRoot: false }, (rid) => this.rows.get(rid)?.get(tmbId)).permission.value;
  }
}

/**
 * Three levels: F1 (default 4, alice write) > F2 (inheriting copy) > F3 (broke inheritance,
 * bob manage) plus F2b (inheriting) below F2; plain apps a1 in F1, a2 in F2, a3 in F3.
 */
function sampleTree() {
  return new Store()
    .add('F1', null, true, { defaultPermission: 4 }, { alice: 6 })
    .add('F2', 'F1', true, { defaultPermission: 4 }, { alice: 6 })
    .add('F2b', 'F2', true, { defaultPermission: 4 }, { alice: 6 })
    .add('F3', 'F2', true, { defaultPermission: 0, inheritPermission: false }, { bob: 7 })
    .add('a1', 'F1', false)
    .add('a2', 'F2', false)
    .add('a3', 'F3', false)
    .add('R', null, true, { defaultPermission: 6 }, { carol: 7 });
}

describe('the spec transitions table', () => {
  it('row 1: inherited folder, default change: inheritance off, changed, child folders synced', () => {
    const s = sampleTree();
    const f2 = s.get('F2');
    s.apply(changeDefaultPermission({ resource: f2, currentDefault: 4, newDefault: 6, parent: s.parentOf('F2'), tree: s.tree() }));
    expect(s.get('F2')).toMatchObject({ defaultPermission: 6, inheritPermission: false });
    expect(s.get('F2b').defaultPermission).toBe(6);
    expect(s.get('F3').defaultPermission).toBe(0); // broke inheritance: untouched
    expect(s.value('dave', 'a2')).toBe(6); // plain child follows live
    expect(s.value('dave', 'F1')).toBe(4);
  });

  it('row 2: inherited resource, default change: inheritance off, changed, parent collaborators copied', () => {
    const s = sampleTree();
    s.apply(changeDefaultPermission({ resource: s.get('a2'), currentDefault: 4, newDefault: 0, parent: s.parentOf('a2'), tree: s.tree() }));
    expect(s.get('a2')).toMatchObject({ defaultPermission: 0, inheritPermission: false });
    expect(s.collaborators('a2')).toEqual([{ tmbId: 'alice', permission: 6 }]);
    expect(s.value('alice', 'a2')).toBe(6);
    expect(s.value('dave', 'a2')).toBe(0);
  });

  it('row 3: non-inherited folder, default change: changed, children synced', () => {
    const s = sampleTree().add('F4', 'F3', true, { defaultPermission: 0 }, { bob: 7 });
    s.apply(changeDefaultPermission({ resource: s.get('F3'), currentDefault: 0, newDefault: 4, parent: s.parentOf('F3'), tree: s.tree() }));
    expect(s.get('F3')).toMatchObject({ defaultPermission: 4, inheritPermission: false });
    expect(s.get('F4').defaultPermission).toBe(4);
    expect(s.value('dave', 'a3')).toBe(4);
  });

  it('row 4: non-inherited resource, default change: only the permission changes', () => {
    const s = sampleTree();
    s.get('a3').inheritPermission = false;
    const writes = changeDefaultPermission({ resource: s.get('a3'), currentDefault: 0, newDefault: 6, parent: s.parentOf('a3'), tree: s.tree() });
    expect(writes).toEqual([{ kind: 'updateResource', resourceId: 'a3', set: { defaultPermission: 6, inheritPermission: false } }]);
  });

  it('an unchanged default writes nothing; a root resource keeps inheriting', () => {
    const s = sampleTree();
    expect(changeDefaultPermission({ resource: s.get('a2'), currentDefault: 4, newDefault: 4, parent: null, tree: s.tree() })).toEqual([]);
    const writes = changeDefaultPermission({ resource: s.get('R'), currentDefault: 6, newDefault: 4, parent: null, tree: s.tree() });
    expect(writes.at(-1)).toEqual({ kind: 'updateResource', resourceId: 'R', set: { defaultPermission: 4 } });
  });

  it('row 5: inherited folder moved: new parent default, collaborators synced down', () => {
    const s = sampleTree();
    s.apply(move({ resource: s.get('F2'), target: s.asParent('R'), tree: s.tree() }));
    expect(s.get('F2')).toMatchObject({ parentId: 'R', defaultPermission: 6 });
    expect(s.collaborators('F2')).toEqual([{ tmbId: 'carol', permission: 7 }]);
    expect(s.get('F2b').defaultPermission).toBe(6);
    expect(s.collaborators('F2b')).toEqual([{ tmbId: 'carol', permission: 7 }]);
    expect(s.collaborators('F3')).toEqual([{ tmbId: 'bob', permission: 7 }]); // shielded
    expect(s.value('alice', 'a2')).toBe(6); // default 6 of R
    expect(s.value('carol', 'a2')).toBe(7);
  });

  it('row 5 to root: an inheriting folder becomes private', () => {
    const s = sampleTree();
    s.apply(move({ resource: s.get('F2'), target: null, tree: s.tree() }));
    expect(s.get('F2')).toMatchObject({ parentId: null, defaultPermission: 0 });
    expect(s.collaborators('F2')).toEqual([]);
    expect(s.value('alice', 'a2')).toBe(0);
  });

  it('row 6: inherited resource moved: only parentId, then follows the new parent', () => {
    const s = sampleTree();
    const writes = move({ resource: s.get('a2'), target: s.asParent('R'), tree: s.tree() });
    expect(writes).toEqual([{ kind: 'updateResource', resourceId: 'a2', set: { parentId: 'R' } }]);
    s.apply(writes);
    expect(s.value('carol', 'a2')).toBe(7);
  });

  it('row 7: non-inherited folder or resource moved: only parentId', () => {
    const s = sampleTree();
    expect(move({ resource: s.get('F3'), target: s.asParent('R'), tree: s.tree() })).toEqual([
      { kind: 'updateResource', resourceId: 'F3', set: { parentId: 'R' } },
    ]);
    s.get('a3').inheritPermission = false;
    expect(move({ resource: s.get('a3'), target: null, tree: s.tree() })).toEqual([{ kind: 'updateResource', resourceId: 'a3', set: { parentId: null } }]);
  });

  it('row 8: resume inheritance on a folder copies the parent down its subtree', () => {
    const s = sampleTree().add('F4', 'F3', true, { defaultPermission: 0 }, { bob: 7 });
    s.apply(resumeInheritance({ resource: s.get('F3'), parent: s.parentOf('F3'), tree: s.tree() }));
    expect(s.get('F3')).toMatchObject({ inheritPermission: true, defaultPermission: 4 });
    expect(s.collaborators('F3')).toEqual([{ tmbId: 'alice', permission: 6 }]);
    expect(s.collaborators('F4')).toEqual([{ tmbId: 'alice', permission: 6 }]);
    expect(s.get('F4').defaultPermission).toBe(4);
    expect(s.value('bob', 'a3')).toBe(4);
  });

  it('row 8: resume inheritance on a resource drops its rows and follows the parent', () => {
    const s = sampleTree();
    s.get('a2').inheritPermission = false;
    s.rows.set('a2', new Map([['eve', 7]]));
    s.apply(resumeInheritance({ resource: s.get('a2'), parent: s.parentOf('a2'), tree: s.tree() }));
    expect(s.get('a2').inheritPermission).toBe(true);
    expect(s.collaborators('a2')).toEqual([]);
    expect(s.value('eve', 'a2')).toBe(4);
    expect(s.value('alice', 'a2')).toBe(6);
  });

  it('resume at the root only sets the flag', () => {
    const s = sampleTree();
    s.get('R').inheritPermission = false;
    expect(resumeInheritance({ resource: s.get('R'), parent: null, tree: s.tree() })).toEqual([
      { kind: 'updateResource', resourceId: 'R', set: { inheritPermission: true } },
    ]);
  });
});

describe('collaborator changes', () => {
  it('on an inheriting plain resource: materialises the parent, then applies the change', () => {
    const s = sampleTree();
    s.apply(changeCollaborators({ resource: s.get('a2'), own: [], parent: s.parentOf('a2'), upserts: [{ tmbId: 'bob', permission: 4 }], tree: s.tree() }));
    expect(s.get('a2')).toMatchObject({ inheritPermission: false, defaultPermission: 4 });
    expect(s.collaborators('a2')).toEqual([
      { tmbId: 'alice', permission: 6 },
      { tmbId: 'bob', permission: 4 },
    ]);
    expect(s.value('dave', 'a2')).toBe(4);
  });

  it('on an inheriting folder: breaks inheritance and copies the result to inheriting subfolders', () => {
    const s = sampleTree();
    s.apply(changeCollaborators({ resource: s.get('F2'), own: s.collaborators('F2'), parent: s.parentOf('F2'), removals: ['alice'], upserts: [{ tmbId: 'eve', permission: 7 }], tree: s.tree() }));
    expect(s.get('F2').inheritPermission).toBe(false);
    expect(s.collaborators('F2')).toEqual([{ tmbId: 'eve', permission: 7 }]);
    expect(s.collaborators('F2b')).toEqual([{ tmbId: 'eve', permission: 7 }]);
    expect(s.collaborators('F3')).toEqual([{ tmbId: 'bob', permission: 7 }]);
    expect(s.value('alice', 'a2')).toBe(4);
    expect(s.value('eve', 'a2')).toBe(7);
  });

  it('on a root folder: targeted writes plus a copy to inheriting subfolders', () => {
    const s = sampleTree();
    const writes = changeCollaborators({ resource: s.get('F1'), own: s.collaborators('F1'), parent: null, upserts: [{ tmbId: 'bob', permission: 4 }], tree: s.tree() });
    expect(writes.map((w) => w.kind)).toEqual(['upsertCollaborators', 'replaceCollaborators']);
    s.apply(writes);
    expect(s.get('F1').inheritPermission).toBe(true);
    expect(s.collaborators('F2b')).toEqual([
      { tmbId: 'alice', permission: 6 },
      { tmbId: 'bob', permission: 4 },
    ]);
  });

  it('on a non-inheriting plain resource: only the targeted row', () => {
    const s = sampleTree();
    s.get('a3').inheritPermission = false;
    expect(changeCollaborators({ resource: s.get('a3'), own: [], parent: s.parentOf('a3'), removals: ['x'], tree: s.tree() })).toEqual([
      { kind: 'removeCollaborators', resourceId: 'a3', tmbIds: ['x'] },
    ]);
  });
});

describe('tree walks and creation', () => {
  it('finds inheriting folders through inheriting folders only', () => {
    const s = sampleTree().add('F5', 'F3', true);
    expect(inheritingFolderDescendants('F1', s.tree()).sort()).toEqual(['F2', 'F2b']);
    expect(inheritingFolderDescendants('F3', s.tree())).toEqual(['F5']);
  });
  it('finds every descendant for cascades', () => {
    expect(allDescendants('F1', sampleTree().tree()).sort()).toEqual(['F2', 'F2b', 'F3', 'a1', 'a2', 'a3']);
  });
  it('a folder created in a folder copies it; anything else starts private', () => {
    const parent = { id: 'F1', defaultPermission: 4, collaborators: [{ tmbId: 'alice', permission: 6 }] };
    expect(initialPermissions(true, parent)).toEqual({ defaultPermission: 4, collaborators: parent.collaborators });
    expect(initialPermissions(false, parent)).toEqual({ defaultPermission: 0, collaborators: [] });
    expect(initialPermissions(true, null)).toEqual({ defaultPermission: 0, collaborators: [] });
  });
});

/**
 * The owner of a folder holds no row on it (ownership is `tmbId`). Whatever copies the folder's
 * rows instead of following it live must keep the owner's rights as manage, level by level.
 * olga owns F (carl 6, mona 7); carl owns the app a in F and the sub-folder G; dan owns H in G.
 */
describe('a copy keeps the parent owner', () => {
  function ownersTree() {
    const s = new Store().add('F', null, true, { ownerTmbId: 'olga' }, { carl: 6, mona: 7 });
    const g = initialPermissions(true, s.asParent('F'), 'carl');
    s.add('G', 'F', true, { ownerTmbId: 'carl', defaultPermission: g.defaultPermission }, Object.fromEntries(g.collaborators.map((c) => [c.tmbId, c.permission])));
    const h = initialPermissions(true, s.asParent('G'), 'dan');
    s.add('H', 'G', true, { ownerTmbId: 'dan', defaultPermission: h.defaultPermission }, Object.fromEntries(h.collaborators.map((c) => [c.tmbId, c.permission])));
    return s.add('a', 'F', false, { ownerTmbId: 'carl' }).add('b', 'H', false, { ownerTmbId: 'dan' });
  }

  it('a folder created in a folder by someone else gets the parent owner as manage, recursively', () => {
    const s = ownersTree();
    expect(s.collaborators('G')).toEqual([
      { tmbId: 'carl', permission: 6 },
      { tmbId: 'mona', permission: 7 },
      { tmbId: 'olga', permission: 7 },
    ]);
    expect(s.collaborators('H')).toEqual([
      { tmbId: 'carl', permission: 7 },
      { tmbId: 'mona', permission: 7 },
      { tmbId: 'olga', permission: 7 },
    ]);
    expect(s.value('olga', 'b')).toBe(7);
    expect(s.value('carl', 'b')).toBe(7);
  });

  it('no row for the new folder own owner, nor with an unknown parent owner', () => {
    const parent = { id: 'F', defaultPermission: 0, collaborators: [{ tmbId: 'carl', permission: 6 }], ownerTmbId: 'olga' };
    expect(initialPermissions(true, parent, 'olga').collaborators).toEqual([{ tmbId: 'carl', permission: 6 }]);
    expect(copiedRows(parent.collaborators, undefined, 'x')).toEqual([{ tmbId: 'carl', permission: 6 }]);
    // A lower row of the parent owner is raised: a row cannot hold the owner value, manage is the most.
    expect(copiedRows([{ tmbId: 'olga', permission: 4 }], 'olga', 'carl')).toEqual([{ tmbId: 'olga', permission: 7 }]);
  });

  it('a plain resource stopping to follow its folder (collaborator change) keeps the folder owner', () => {
    const s = ownersTree();
    expect(s.value('olga', 'a')).toBe(0xffffffff);
    s.apply(changeCollaborators({ resource: s.get('a'), own: [], parent: s.parentOf('a'), upserts: [{ tmbId: 'xena', permission: 4 }], tree: s.tree() }));
    expect(s.get('a').inheritPermission).toBe(false);
    expect(s.value('olga', 'a')).toBe(7);
    expect(s.value('mona', 'a')).toBe(7);
    expect(s.value('xena', 'a')).toBe(4);
  });

  it('a plain resource stopping to follow its folder (default change) keeps the folder owner', () => {
    const s = ownersTree();
    s.apply(changeDefaultPermission({ resource: s.get('a'), currentDefault: 0, newDefault: 4, parent: s.parentOf('a'), tree: s.tree() }));
    expect(s.get('a').inheritPermission).toBe(false);
    expect(s.value('olga', 'a')).toBe(7);
    expect(s.value('nobody', 'a')).toBe(4);
  });

  it('a folder change copied down its inheriting sub-folders keeps each level parent owner', () => {
    const s = ownersTree();
    s.apply(changeCollaborators({ resource: s.get('F'), own: s.collaborators('F'), parent: null, upserts: [{ tmbId: 'xena', permission: 4 }], removals: ['carl'], tree: s.tree() }));
    expect(s.collaborators('G')).toEqual([
      { tmbId: 'mona', permission: 7 },
      { tmbId: 'olga', permission: 7 },
      { tmbId: 'xena', permission: 4 },
    ]);
    expect(s.collaborators('H')).toEqual([
      { tmbId: 'carl', permission: 7 },
      { tmbId: 'mona', permission: 7 },
      { tmbId: 'olga', permission: 7 },
      { tmbId: 'xena', permission: 4 },
    ]);
  });

  it('move and resume of a folder keep the new parent owner down the subtree', () => {
    const s = ownersTree().add('T', null, true, { ownerTmbId: 'tom' }, { xena: 6 });
    s.apply(move({ resource: s.get('G'), target: s.asParent('T'), tree: s.tree() }));
    expect(s.collaborators('G')).toEqual([
      { tmbId: 'tom', permission: 7 },
      { tmbId: 'xena', permission: 6 },
    ]);
    expect(s.collaborators('H')).toEqual([
      { tmbId: 'carl', permission: 7 },
      { tmbId: 'tom', permission: 7 },
      { tmbId: 'xena', permission: 6 },
    ]);
    s.get('G').inheritPermission = false;
    s.rows.set('G', new Map([['zed', 7]]));
    s.apply(resumeInheritance({ resource: s.get('G'), parent: s.parentOf('G'), tree: s.tree() }));
    expect(s.value('tom', 'G')).toBe(7);
    expect(s.value('tom', 'b')).toBe(7);
    expect(s.value('carl', 'b')).toBe(7);
  });
});

describe('managersLostByResume', () => {
  const s = () =>
    new Store()
      .add('F', null, true, { ownerTmbId: 'olga', defaultPermission: 4 }, { mona: 7, carl: 6 })
      .add('a', 'F', false, { ownerTmbId: 'olga', inheritPermission: false }, { mona: 7, nick: 7, carl: 7, olga: 7, xena: 6 });
  it('lists own manage rows the parent does not grant manage (its rows, its owner, its default)', () => {
    const store = s();
    expect(managersLostByResume({ resource: store.get('a'), own: store.collaborators('a'), parent: store.parentOf('a') })).toEqual(['carl', 'nick']);
  });
  it('a parent default of manage keeps members without a row there (a row overrides it); nobody at the root', () => {
    const store = s();
    store.get('F').defaultPermission = 7;
    expect(managersLostByResume({ resource: store.get('a'), own: store.collaborators('a'), parent: store.parentOf('a') })).toEqual(['carl']);
    store.get('a').parentId = null;
    expect(managersLostByResume({ resource: store.get('a'), own: store.collaborators('a'), parent: null })).toEqual([]);
  });
  it('the parent owner keeps manage after a resume', () => {
    const store = s();
    store.get('a').ownerTmbId = 'carl';
    store.rows.set('a', new Map([['olga', 7]]));
    expect(managersLostByResume({ resource: store.get('a'), own: store.collaborators('a'), parent: store.parentOf('a') })).toEqual([]);
  });
});
