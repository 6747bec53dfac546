/** KubeSphere 3.4 policy: 8–64 characters with a lowercase letter, an uppercase letter and a digit. */
export function passwordPolicyProblem(password: string): string | null {
  if (password.length < 8 || password.length > 64) return 'password must be 8 to 64 characters long';
  if (!/[a-z]/.test(password) || !/[A-Z]/.test(password) || !/\d/.test(password)) {
    return 'password must contain at least one lowercase letter, one uppercase letter and one digit';
  }
  return null;
}

/** Console rule for user names: lowercase DNS-subdomain style. */
export const USERNAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
