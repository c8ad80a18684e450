"""Cosmos QA (Huang et al. 2019): blog paragraphs, crowd questions, "None of the above"."""
