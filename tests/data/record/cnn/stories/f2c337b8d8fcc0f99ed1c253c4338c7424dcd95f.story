(CNN)A short nap after lunch may do more for your memory than an extra cup of coffee, according to a new study of adult volunteers in Canada.

Researchers asked participants to learn lists of unfamiliar words and then either sleep, rest quietly or drink coffee before being tested again.

Those who had napped remembered noticeably more of the words, and the benefit was largest among people who said they usually slept badly.

Lead author Miriam Oduya cautioned that the group was small and that longer naps left many volunteers feeling groggy and irritable rather than refreshed and ready to get back to work.

Sleep helps the brain move fresh memories into longer-term storage, earlier work suggests.

Psychologist Tobias Lindqvist, who was not involved, said the findings looked plausible.

@highlight

A short nap may help memory more than coffee, a small study finds

@highlight

People who usually sleep badly benefited most