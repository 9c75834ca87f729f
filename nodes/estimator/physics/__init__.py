"""What a stage needs: working memory of a model's forward at the prompt's shapes (wing 3).

- memory: activations of a diffusion step and of a text-encoder pass (traced tables, fitted factors)
- vae_memory: VAE decode / encode working memory and the auto-tiling planner
"""
