mod binary_frames;
mod direct_handover;
mod e2e_link;
mod hostile;
mod pacing;
mod protocol;
mod strict_link;
