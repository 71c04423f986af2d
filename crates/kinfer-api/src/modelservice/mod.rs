//! ModelService, `model.otterscale.io/v1alpha1`.
