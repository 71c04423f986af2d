//! AMD AIM Engine kinds, `aim.eai.amd.com/v1alpha1`.
