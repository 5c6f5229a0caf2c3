"""The neural building blocks the detectors are made of: quaternion layers and the HABERTOR model,
the GAttention head, and the attention regularisers (EAR, KLAR)."""
